import TetherVMCentral

@main
struct Entrypoint {
    static func main() async {
        await CentralCommand.main()
    }
}
