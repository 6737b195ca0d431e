import FerryBytes

/// `StripedChecksum.Running` over pieces of any length: bytes are fed in whole 32-byte stripes, the last few kept
/// until more come. Striped, not `Checksum64`: one lane was 20 % of ferryd streaming a 1 GiB download (perf), four
/// overlap their multiplies (`ValueSum`); a body adopted by the store is checked with the sum it arrived with.
struct ChecksumBuilder {
    private var running: StripedChecksum.Running
    private let count: Int
    private var fed = 0
    private var carry: [UInt8] = []

    init(count: Int) {
        self.count = count
        running = StripedChecksum.Running(count: count)
    }

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        fed += bytes.count
        guard fed <= count else { return }  // longer than announced: the checksum is the store's to make
        var rest = bytes[...]
        if !carry.isEmpty {
            let take = min(32 - carry.count, rest.count)
            carry.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            guard carry.count == 32 else { return }
            running.add(carry)
            carry.removeAll(keepingCapacity: true)
        }
        let whole = rest.count & ~31
        running.add(UnsafeRawBufferPointer(rebasing: rest.prefix(whole)))
        carry.append(contentsOf: rest.dropFirst(whole))
    }

    /// The checksum, when exactly `count` bytes were fed.
    func finish(count actual: Int) -> Int64? {
        guard actual == count, fed == count else { return nil }
        var r = running
        if !carry.isEmpty { r.add(carry) }
        return Int64(bitPattern: r.finish())
    }
}
