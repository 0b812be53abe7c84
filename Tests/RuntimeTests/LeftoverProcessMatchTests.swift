import Testing
@testable import Runtime

/// Which processes the next start ends: those whose `PHOTOMEMO_RUN` names this very home
/// and another run of it.
@Suite struct LeftoverProcessMatchTests {
    @Test func onlyThisHomesOtherRunsAreLeftovers() {
        let home = "/srv/photos"
        #expect(LeftoverProcesses.isLeftover("PHOTOMEMO_RUN=/srv/photos#12-34", home: home, run: "56-78"))
        #expect(!LeftoverProcesses.isLeftover("PHOTOMEMO_RUN=/srv/photos#56-78", home: home, run: "56-78"))  // this run's
        #expect(!LeftoverProcesses.isLeftover("PHOTOMEMO_RUN=/srv/photos2#12-34", home: home, run: "56-78"))
        #expect(!LeftoverProcesses.isLeftover("PHOTOMEMO_RUN=/srv/photos#b#12-34", home: home, run: "56-78"))  // home /srv/photos#b
        #expect(LeftoverProcesses.isLeftover("PHOTOMEMO_RUN=/srv/a#b#12-34", home: "/srv/a#b", run: "56-78"))
        #expect(!LeftoverProcesses.isLeftover("PHOTOMEMO_HOME=/srv/photos", home: home, run: "56-78"))
        #expect(!LeftoverProcesses.isLeftover("PHOTOMEMO_RUN=/srv/photos", home: home, run: "56-78"))
    }
}
