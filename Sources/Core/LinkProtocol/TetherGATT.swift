/// Tether's GATT service (docs/specs/link-protocol.md §2): the one place its UUIDs are spelled. The gateway looks them up,
/// tether-sim and tether-peripheral offer them.
public enum TetherGATT {
    public static let service = "54455448-0001-4c1e-8e5a-7a3d2f1b0c00"
    /// RX, gateway → device: write without response (§2.1).
    public static let rx = "54455448-0002-4c1e-8e5a-7a3d2f1b0c00"
    /// TX, device → gateway: notify.
    public static let tx = "54455448-0003-4c1e-8e5a-7a3d2f1b0c00"
}
