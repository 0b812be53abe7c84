/// Stages that hold something the control socket needs too (found in the job
/// definition, so the socket uses the very store or index the pipeline writes).
public protocol RecordIndexStage: Stage {
    /// The SQLite file of the record index.
    var indexPath: String { get }
}

public protocol AssetStoreStage: Stage {
    var assetStore: any AssetStore { get }
}
