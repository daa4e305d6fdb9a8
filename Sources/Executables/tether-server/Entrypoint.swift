import TetherServer

@main
struct Entrypoint {
    static func main() async {
        await ServerCommand.main()
    }
}
