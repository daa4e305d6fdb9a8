import TetherCLI

@main
enum Entrypoint {
    static func main() async {
        await TetherRootCommand.main()
    }
}
