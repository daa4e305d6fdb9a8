import Foundation
import TetherCLI

@main
enum Entrypoint {
    static func main() async {
        exit(await TetherMain.run(Array(CommandLine.arguments.dropFirst())))
    }
}
