import Glibc

/// A failed system or libuv call: the call's name and the errno (or libuv error code).
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// What the errno means, as strerror(3) says it.
    public var reason: String { Self.reason(errno) }

    /// The one place errno text is made (for a code that came another way, e.g. a Foundation
    /// `POSIXError`).
    public static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    public var description: String { "\(call): \(reason)" }

    /// The errno as a stable code: decided here, where the errno is known, so no one
    /// parses the reason text for it.
    public var code: PhotomemoError.Code { Self.code(errno) }

    public static func code(_ errno: Int32) -> PhotomemoError.Code {
        errno == ENOSPC || errno == EDQUOT ? .noSpace : .io
    }
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

/// `syscall` for a call that fails with NULL (`fdopendir`, `opendir`): its pointer, or a
/// `SystemError`; EINTR retried.
public func syscall<T>(_ call: @autoclosure () -> String, pointer body: () -> T?) throws -> T {
    while true {
        if let r = body() { return r }
        let e = Glibc.errno
        if e == EINTR { continue }
        throw SystemError(call(), errno: e)
    }
}

/// `syscall` on a non-blocking descriptor: nil when nothing can be done now (EAGAIN);
/// EINTR retried.
public func syscall<T: BinaryInteger>(_ call: @autoclosure () -> String, nonblocking body: () -> T) throws -> T? {
    do {
        return try syscall(call(), blocking: body)
    } catch let e as SystemError where e.errno == EAGAIN || e.errno == EWOULDBLOCK {
        return nil
    }
}

/// `syscall` for a wait whose caller recomputes its timeout when a signal interrupts it
/// (`poll`): nil on EINTR, so the caller's loop goes round, instead of waiting the old
/// timeout again.
public func syscall<T: BinaryInteger>(_ call: @autoclosure () -> String, interruptible body: () -> T) throws -> T? {
    let r = body()
    if r >= 0 { return r }
    let e = Glibc.errno
    if e == EINTR { return nil }
    throw SystemError(call(), errno: e)
}
