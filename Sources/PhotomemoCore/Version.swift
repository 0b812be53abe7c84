/// The version the daemon reports in `status` and `metrics`, and the CLI in `--version`.
public enum PhotomemoVersion {
    public static let current = "0.2.0"
}
