import Testing
@testable import FerryProtocol
@testable import FerryServer

/// Every path of a shutdown through `Lifecycle.decide`, and the admission rules, without a loop or a socket.
@Suite struct DaemonLifecycleTests {
    @Test func aSignalWithNothingInFlightStopsAtTheEndOfTheIteration() {
        var life = Lifecycle()
        #expect(!life.isDraining)
        #expect(life.decide(.signal, inFlight: 0, connections: 2) == [.stopAccepting])
        #expect(life.state == .stopPending && life.isDraining)
        #expect(life.decide(.endOfIteration, inFlight: 0, connections: 2)
                == [.closeTimers, .startFinalFlushTimer, .cancelInFlight, .closeAfterFlush])
        #expect(life.state == .stopping)
        #expect(life.decide(.allClosed, inFlight: 0, connections: 0) == [.releaseLoop])
        #expect(life.state == .stopped)
    }

    @Test func requestsInFlightGetTheGracePeriodThenTheStop() {
        var life = Lifecycle()
        #expect(life.decide(.signal, inFlight: 3, connections: 1) == [.stopAccepting, .startGraceTimer])
        #expect(life.state == .draining)
        #expect(life.decide(.endOfIteration, inFlight: 3, connections: 1) == [], "draining waits for the requests")
        #expect(life.decide(.drained, inFlight: 0, connections: 1) == [])
        #expect(life.state == .stopPending)
        var late = Lifecycle()
        _ = late.decide(.signal, inFlight: 3, connections: 1)
        #expect(late.decide(.graceOver, inFlight: 3, connections: 1) == [] && late.state == .stopPending)
    }

    @Test func aSecondSignalEndsTheGraceAThirdCutsRepliesOff() {
        var life = Lifecycle()
        _ = life.decide(.signal, inFlight: 1, connections: 1)
        #expect(life.decide(.signal, inFlight: 1, connections: 1) == [] && life.state == .stopPending)
        #expect(life.decide(.signal, inFlight: 1, connections: 1) == [] && life.state == .stopPending, "pending stays pending")
        _ = life.decide(.endOfIteration, inFlight: 1, connections: 1)
        #expect(life.decide(.signal, inFlight: 0, connections: 1) == [.closeAllNow])
        #expect(life.decide(.finalFlushOver, inFlight: 0, connections: 1) == [.closeAllNow])
        #expect(life.state == .stopping)
    }

    @Test func requestsAnsweredWhileStoppingDoNotStopTwice() {
        var life = Lifecycle()
        _ = life.decide(.signal, inFlight: 2, connections: 2)
        _ = life.decide(.graceOver, inFlight: 2, connections: 2)
        _ = life.decide(.endOfIteration, inFlight: 2, connections: 2)
        // Cancelling the two requests drains the daemon a second time; the final flush must go on.
        #expect(life.decide(.drained, inFlight: 0, connections: 2) == [])
        #expect(life.decide(.endOfIteration, inFlight: 0, connections: 2) == [])
        #expect(life.state == .stopping)
    }

    @Test func noConnectionLeftReleasesAtOnce() {
        var life = Lifecycle()
        _ = life.decide(.signal, inFlight: 0, connections: 0)
        #expect(life.decide(.endOfIteration, inFlight: 0, connections: 0) == [.closeTimers, .releaseLoop])
        #expect(life.state == .stopped)
        #expect(life.decide(.signal, inFlight: 0, connections: 0) == [] && life.decide(.finalFlushOver, inFlight: 0, connections: 0) == [])
    }

    @Test func eventsWhileRunningChangeNothing() {
        for event in [Lifecycle.Event.drained, .graceOver, .endOfIteration, .finalFlushOver, .allClosed] {
            var life = Lifecycle()
            #expect(life.decide(event, inFlight: 0, connections: 0) == [] && life.state == .running, "\(event)")
        }
    }

    @Test func admission() {
        #expect(Listener.admission(peerUID: 1000, daemonUID: 1000, allowOtherUsers: false, open: 1, maxConnections: 4) == nil)
        #expect(Listener.admission(peerUID: 1001, daemonUID: 1000, allowOtherUsers: false, open: 1, maxConnections: 4)?.code == .permissionDenied)
        #expect(Listener.admission(peerUID: nil, daemonUID: 1000, allowOtherUsers: false, open: 1, maxConnections: 4)?.code == .permissionDenied)
        #expect(Listener.admission(peerUID: 1001, daemonUID: 1000, allowOtherUsers: true, open: 1, maxConnections: 4) == nil)
        #expect(Listener.admission(peerUID: nil, daemonUID: 1000, allowOtherUsers: true, open: 4, maxConnections: 4) == nil)
        #expect(Listener.admission(peerUID: 1000, daemonUID: 1000, allowOtherUsers: false, open: 5, maxConnections: 4)?.code == .resourceExhausted)
    }
}
