/// Byte order of a multi-byte integer on the wire. The link protocol and the Bluetooth SIG characteristics are
/// little-endian (Core Specification Vol 3 Part G §3.3.3.1 for ATT values); MCUmgr's SMP header is big-endian.
public enum Endianness: Sendable, Hashable {
    case little
    case big
}
