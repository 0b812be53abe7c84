import Glibc

/// A failed system or libuv call: the call's name and the errno (or libuv error code).
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// The one place errno is read: runs `body` (retrying on EINTR) and throws a
/// `SystemError` naming `call` when it returns -1.
@discardableResult
public func syscall<T: BinaryInteger>(_ call: @autoclosure () -> String, blocking body: () -> T) throws -> T {
    while true {
        let r = body()
        if r >= 0 { return r }
        let e = Glibc.errno
        if e == EINTR { continue }
        throw SystemError(call(), errno: e)
    }
}

