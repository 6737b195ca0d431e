import Testing
@testable import FerryServer

@Suite struct ConfigReloadTests {
    static let running = ServerConfig(socketPath: "/tmp/s", socketIsDefault: false, cacheDirectory: "/tmp/c")

    @Test func liveSettingsChangeAndTheRestWaitForARestart() {
        var next = Self.running
        next.memoryLimit = 1 << 30
        next.logLevel = .debug
        next.diskLimit = 8 << 30
        next.socketPath = "/tmp/other"
        let plan = ConfigReload.plan(from: Self.running, to: next)
        #expect(plan.live == ["log-level", "memory-limit"])
        #expect(plan.restart == ["socket", "disk-limit"])
        let applied = ConfigReload.applying(next, to: Self.running)
        #expect(applied.memoryLimit == 1 << 30 && applied.logLevel == .debug)
        #expect(applied.diskLimit == Self.running.diskLimit && applied.socketPath == "/tmp/s", "kept as running")
        #expect(ConfigReload.plan(from: applied, to: next).live.isEmpty, "a second reload changes nothing more")
    }

    @Test func nothingChangedIsAnEmptyPlan() {
        #expect(ConfigReload.plan(from: Self.running, to: Self.running).isEmpty)
    }
}
