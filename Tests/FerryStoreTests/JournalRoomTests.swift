import Testing
@testable import FerryStore

/// How far the journal may run ahead of the index, against a file system whose free bytes the test sets (and whose
/// looks it counts: `statvfs` once per half reserve journaled, not per set).
@Suite struct JournalRoomTests {
    final class FakeDisk {
        var free: Int
        var looks = 0
        init(free: Int) { self.free = free }
        func read() -> Int { looks += 1; return free }
    }

    static let reserve = 256 * 1024

    @Test func onADiskWithRoomAThirdOfTheFreeSpaceMayWaitUnapplied() {
        let disk = FakeDisk(free: 6 * 1024 * 1024)
        var room = JournalRoom(reserveSize: Self.reserve, bufferLimit: 64 << 20, free: disk.read)
        #expect(disk.looks == 1 && room.nextLookAt == Self.reserve / 2)
        #expect(room.admits(unappliedOnDisk: 2 * 1024 * 1024 - 100, heldInMemory: 0, size: 100))
        #expect(!room.admits(unappliedOnDisk: 2 * 1024 * 1024, heldInMemory: 0, size: 100), "past a third of 6 MiB")
        // The disk fills (something else wrote): the next look lowers the limit; no look, no change.
        disk.free = 3 * 1024 * 1024
        #expect(room.admits(unappliedOnDisk: 1024 * 1024 + 1, heldInMemory: 0, size: 1), "the last look still holds")
        let short = room.look(journalBytes: 500_000)
        #expect(!short, "3 MiB is more than four reserves")
        #expect(disk.looks == 2 && room.nextLookAt == 500_000 + Self.reserve / 2)
        #expect(!room.admits(unappliedOnDisk: 1024 * 1024 + 1, heldInMemory: 0, size: 1))
    }

    @Test func shortOfRoomHalfTheReserveMayWaitAndTheFileIsSealedSooner() {
        let disk = FakeDisk(free: 4 * Self.reserve - 1)
        var room = JournalRoom(reserveSize: Self.reserve, bufferLimit: 64 << 20, free: disk.read)
        let short = room.look(journalBytes: 0)
        #expect(short, "under four reserves free")
        #expect(room.admits(unappliedOnDisk: Self.reserve / 2 - 10, heldInMemory: 0, size: 10))
        #expect(!room.admits(unappliedOnDisk: Self.reserve / 2 - 10, heldInMemory: 0, size: 11))
        room.rotated()
        #expect(room.nextLookAt == Self.reserve / 2)
        #expect(JournalRoom(reserveSize: 1 << 30, bufferLimit: 1, free: disk.read).rotateWhenShortBytes == JournalRoom.rotateBytes)
        #expect(JournalRoom(reserveSize: 1024, bufferLimit: 1, free: disk.read).rotateWhenShortBytes == 64 * 1024)
    }

    @Test func memoryHeldForTheJournalNeverPassesTheBufferLimitWhateverTheDisk() {
        let disk = FakeDisk(free: 1 << 40)
        let room = JournalRoom(reserveSize: Self.reserve, bufferLimit: 8 << 20, free: disk.read)
        #expect(room.admits(unappliedOnDisk: 0, heldInMemory: (8 << 20) - 100, size: 100))
        #expect(!room.admits(unappliedOnDisk: 0, heldInMemory: (8 << 20) - 99, size: 100))
    }

    /// Sealed files wait for the next sweep up to 128 MiB on a large disk, up to half of what may wait unapplied on a
    /// smaller one, and not at all while the disk is short of room.
    @Test func sealedFilesWaitForTheSweepOnlyWhileTheDiskHasRoomForThem() {
        let disk = FakeDisk(free: 1 << 40)
        var room = JournalRoom(reserveSize: Self.reserve, bufferLimit: 64 << 20, free: disk.read)
        #expect(!room.appliesSealed(JournalRoom.sealedBytesLimit - 1))
        #expect(room.appliesSealed(JournalRoom.sealedBytesLimit))
        disk.free = 60 << 20  // a third (20 MiB) may wait unapplied: sealed files apply at 10 MiB
        _ = room.look(journalBytes: 0)
        #expect(!room.appliesSealed((10 << 20) - 1) && room.appliesSealed(10 << 20))
        disk.free = 4 * Self.reserve - 1
        let short = room.look(journalBytes: 0)
        #expect(short, "short of room")
        #expect(room.appliesSealed(room.rotateWhenShortBytes), "every sealed file applied at once")
    }
}
