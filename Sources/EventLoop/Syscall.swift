import CUV
import StageKit

/// The one place libuv's negative error codes become Swift errors (errno values, so
/// they print like `syscall`'s).
func uvCheck(_ rc: Int32, _ call: @autoclosure () -> String) throws {
    if rc < 0 { throw SystemError(call(), errno: -rc) }
}
