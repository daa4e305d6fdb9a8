import ArgumentParser
import Foundation
import MCUbootImage
import TetherFirmware

/// `tether firmware`: MCUboot firmware images and the updates tetherd runs (issue 16). `inspect` works offline;
/// `update`, `list`, `test`, `confirm`, `reset` and `erase` go through tetherd for a device it serves, or straight to a
/// device over SMP's UDP transport with `--udp HOST:PORT` (FirmwareSlotCommands.swift); `echo` is UDP only.
struct FirmwareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firmware",
        abstract: "Check MCUboot firmware images, and update and manage the images on devices (through tetherd, or over UDP).",
        subcommands: [Inspect.self, Update.self, Updates.self, List.self, Echo.self, Test.self, Confirm.self, Reset.self, Erase.self])

    /// `tether firmware inspect IMAGE [--keys DIR] [--json]`.
    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Show an MCUboot image's header, version, hash, signature and key, and whether it verifies.",
            discussion: """
                Offline: reads IMAGE and the trusted public keys, never tetherd. An image verifies when it is well \
                formed, its SHA-256 over header, body and protected TLVs matches its SHA256 TLV, and its Ed25519 \
                or ECDSA P-256 signature verifies against one of the trusted keys named by its KEYHASH or PUBKEY \
                TLV. Anything else is refused with the reason (docs/design/firmware-images.md).

                Trusted keys: every file in DIR is one public key, PEM or DER (what `imgtool getpub -e pem` or \
                `-e raw` writes); a private key or any other file there is an error. Without --keys, \
                \(TrustedKeyDirectory.defaultPath) is read; tetherd's configuration will name the directory once \
                updates run in the daemon.

                Exit status: 0 the image verifies against a trusted key; 1 the image is refused; 2 usage: the \
                image or the key directory cannot be read, or a key file is not a public key.
                """)

        @Argument(help: ArgumentHelp("The image file (imgtool's signed .bin).", valueName: "image"))
        var image: String

        @Option(help: ArgumentHelp("Directory of trusted public keys (default \(TrustedKeyDirectory.defaultPath)).", valueName: "dir"))
        var keys: String?

        @Flag(help: "Print the verdict as one JSON object.")
        var json = false

        func run() throws {
            let (bytes, trusted) = try readImageAndKeys(image: image, keys: keys)
            let verdict = ImageVerifier.inspect(bytes, trustedKeys: trusted)
            if json {
                Output.line(FirmwareVerdictText.json(verdict, file: image))
            } else {
                Output.line(FirmwareVerdictText.table(verdict, file: image))
            }
            if !verdict.isVerified { throw TetherExitCode.checkFailed }
        }
    }
}

/// Prints `tether firmware: message` on standard error and gives the exit code to throw.
/// An image file and the trusted keys to judge it by, read at the edge; either unreadable is bad input, said once.
func readImageAndKeys(image: String, keys: String?) throws -> (bytes: [UInt8], trusted: TrustedKeys) {
    let bytes: [UInt8]
    do {
        bytes = Array(try Data(contentsOf: URL(fileURLWithPath: image)))
    } catch {
        throw firmwareFailure("cannot read \(image): \(error.localizedDescription)", TetherExitCode.badInput)
    }
    do {
        return (bytes, try TrustedKeyDirectory.load(keys ?? TrustedKeyDirectory.defaultPath))
    } catch {
        let hint = keys == nil ? " (name the trusted-key directory with --keys DIR)" : ""
        throw firmwareFailure("\(error)\(hint)", TetherExitCode.badInput)
    }
}

func firmwareFailure(_ message: String, _ code: ExitCode) -> ExitCode {
    standardError("tether firmware: \(message)")
    return code
}

