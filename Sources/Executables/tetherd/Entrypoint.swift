import TetherDaemon

/// tetherd's entry point; everything else lives in the TetherDaemon library.
@main
enum Entrypoint {
    static func main() async {
        await DaemonCommand.main()
    }
}
