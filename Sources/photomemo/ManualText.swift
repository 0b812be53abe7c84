/// What the manual page says beyond the command table: each entry is (term, meaning).
/// The commands and options come from `commands`, as `--help` does.
enum ManualText {
    static let name = "photomemo - a photo-memo pipeline daemon and its command-line client"

    static let description = """
    Photos dropped into HOME/inbox and memo jobs appended to HOME/queue.jsonl flow through the stages of a job \
    definition (validate, compress, upload, index, notify, exec). Every job is in the journal before its input \
    leaves the inbox, and a crash at any instant resumes without loss and without duplicates. `photomemo serve` \
    is the daemon; every other command talks to it through its control socket, as the calling user: \
    identity comes from the socket's peer, never from what a client says.
    """

    static let home: [(String, String)] = [
        ("inbox/", "drop photos here (a tree; names a tool writes while a file is in transit, such as .NAME.part, are taken once renamed)"),
        ("queue.jsonl", "memo jobs, one JSON object a line, belonging to the daemon's user"),
        ("queue.d/NAME.jsonl", "one queue file per other user; its lines belong to the file's owner"),
        ("photomemo.sqlite", "the journal (jobs, their history, the queue position) and, by default, the records"),
        ("quarantine/", "what can never succeed, each with NAME.reason.json"),
        ("store/", "the local asset store, one file per distinct content"),
        ("renditions/", "compress output waiting for upload"),
        ("reprocess/", "copies of stored originals that `photomemo reprocess` jobs run from, each until it is stored again"),
        ("done/", "originals, with the definition's \"inbox\": {\"originals\": \"move\"}"),
        ("photomemo.sock", "the control socket (mode 0600, or 0660 with --socket-group)"),
        ("photomemo.lock", "held by the running daemon; holds its pid"),
        ("crash.log", "the fatal-signal line of the last run that died of one"),
    ]

    static let exitStatus: [(String, String)] = [
        ("0", "success"),
        ("1", "an error, with its message on standard error (the daemon is not running, a request was refused, a bad job definition, ...)"),
        ("2", "bad usage: an unknown command or option (with a did-you-mean), or a missing value"),
    ]

    static let signals: [(String, String)] = [
        ("SIGTERM, SIGINT", "serve stops intake, lets running stages finish within --grace and exits 0; a second signal exits at once"),
        ("SIGHUP", "serve re-reads the job definition; a bad one is logged and the old one keeps running"),
    ]

    static let environment: [(String, String)] = [
        ("PHOTOMEMO_HOME", "the home when --home is not given (else ./var)"),
        ("PHOTOMEMO_LOG", "serve's log level when --log-level is not given"),
        ("NO_COLOR", "set: watch prints no colour"),
        ("AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION", "credentials and region of an s3:// store"),
        ("PGPASSWORD, PGPASSFILE", "read by libpq for a postgres:// database"),
        ("NOTIFY_SOCKET", "set by systemd: serve tells it READY=1 once serving and STOPPING=1 on SIGTERM"),
    ]

    static let files: [(String, String)] = [
        ("/usr/bin/photomemo", "the daemon and client (Debian package)"),
        ("/etc/photomemo/photo-memo.json", "the job definition the packaged unit runs (a conffile: your edits are kept on upgrade); serve without --job uses the same definition built in"),
        ("/lib/systemd/system/photomemo.service", "the unit: Type=notify, as user photomemo, home /var/lib/photomemo; reload with systemctl reload photomemo"),
        ("/var/lib/photomemo", "the packaged daemon's home (mode 0750, user photomemo); kept by dpkg -r, removed by dpkg --purge"),
        ("/usr/share/doc/photomemo/", "the README and the docs"),
    ]

    static let seeAlso = "systemctl(1), journalctl(1), systemd.exec(5), /usr/share/doc/photomemo/README.md.gz"
}
