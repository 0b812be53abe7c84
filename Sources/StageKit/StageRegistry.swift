/// The stages a daemon knows, by name. Each stage type is registered once; registering a
/// second type under a taken name is a programming error and traps.
public struct StageRegistry: Sendable {
    public private(set) var stages: [String: any Stage.Type] = [:]

    public init() {}

    public init(_ types: [any Stage.Type]) {
        for t in types { register(t) }
    }

    public mutating func register(_ type: any Stage.Type) {
        precondition(stages[type.name] == nil, "stage \"\(type.name)\" registered twice")
        stages[type.name] = type
    }

    public subscript(name: String) -> (any Stage.Type)? { stages[name] }

    public var names: [String] { stages.keys.sorted() }
}
