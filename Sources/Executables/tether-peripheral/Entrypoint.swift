import TetherPeripheral

@main
struct Entrypoint {
    static func main() async {
        await PeripheralCommand.main()
    }
}
