/// A stage that keeps processes running between jobs (`exec` with `workers`). When a
/// reload replaces its definition the runtime calls `retire`: its processes stop
/// gracefully, and the new definition's stage starts its own. Must not block (the loop
/// thread calls it).
public protocol LongLivedStage: Stage {
    func retire()
}
