import SMPUDPDevice

@main
struct Entrypoint {
    static func main() { SMPDeviceCommand.main() }
}
