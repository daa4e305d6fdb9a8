import Foundation

/// The MCUboot images imgtool 2.5.0 signed for the MCUbootImage tests (Tests/MCUbootImageTests/make-images.sh says
/// how each was made; their versions are the `-v` arguments given there), and the repository's scripts.
enum Fixtures {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let directory = repositoryRoot.appendingPathComponent("Tests/MCUbootImageTests/Fixtures")

    static func image(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: directory.appendingPathComponent(name + ".img")))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("smp-device-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
