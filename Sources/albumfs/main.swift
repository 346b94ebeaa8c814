import AlbumCore
import Foundation
import Glibc

// albumfs: the command line (PRODUCT.md section 5). Each command lives in its own file
// under Commands/; this file only dispatches.

setlocale(LC_ALL, "")
// A mount holds a descriptor for every file open through it (DescriptorLimit).
DescriptorLimit.raiseToHard()
let arguments = Array(CommandLine.arguments.dropFirst())
let status: Int32
do {
    status = try Commands.run(arguments)
} catch {
    let failure = CommandError.from(error)
    printError(failure.message)
    status = failure.code
}
exit(status)
