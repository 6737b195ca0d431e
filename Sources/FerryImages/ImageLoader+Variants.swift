import FerryProtocol

/// One variant being made: everyone waiting for it, and the task that gets its original and makes it.
final class VariantJob {
    let key: String
    var subscribers: [ImageSubscriber: CheckedContinuation<Result<LoadedImage, ImageError>, Never>] = [:]
    var task: Task<Void, Never>?
    /// The loader's own subscription to the original's download, while the job waits for it.
    var originalSubscriber: ImageSubscriber?
    /// Its place in the line for a resize slot, while it waits for one.
    var resizeTicket: UInt64?
    /// Whether a direct request waits for it (not only a prefetch): its original's download is then direct too.
    var direct = false

    init(key: String) { self.key = key }
}

/// Variants: made once for every client. A request with a variant is answered from the memory tier, else by one
/// job per variant key that every concurrent request joins: the job loads the original through the same path as
/// any request (so the original's download is shared too, and its HTTP rules apply), then finds the variant in the
/// store under the original's validator, or makes it on the decoder's pool and stores it. An original whose
/// validator changed has new variants; storing one drops the old version's.
extension ImageLoader {
    func loadVariant(_ request: ImageRequest, subscriber: ImageSubscriber) async throws(ImageError) -> LoadedImage {
        let key = request.variantKey
        if request.cache.readsMemory, let image = memory.image(for: key, nowMs: now()) {
            stats.memoryHits += 1
            stats.variantMemoryHits += 1
            return LoadedImage(bytes: image.bytes, info: image.info, source: .memory, url: image.url, validator: image.validator)
        }
        let outcome: Result<LoadedImage, ImageError> = await withCheckedContinuation { continuation in
            variantSubscriptions[subscriber] = key
            if let job = variantJobs[key] {
                stats.coalesced += 1
                job.subscribers[subscriber] = continuation
                // A direct request joining a prefetched variant: its original's download is direct now.
                if !request.isPrefetch {
                    job.direct = true
                    if let original = job.originalSubscriber, let download = download(of: original) { promote(download) }
                }
                return
            }
            let job = VariantJob(key: key)
            job.direct = !request.isPrefetch
            job.subscribers[subscriber] = continuation
            variantJobs[key] = job
            job.task = Task { await self.make(job, request) }
        }
        return try outcome.get()
    }

    /// Starts making a variant nobody waits for (`prefetch`): its original's download is a prefetch, behind every
    /// direct request; a request for the variant meanwhile joins the job. False when it is in memory or being made.
    func prefetchVariant(_ request: ImageRequest) -> Bool {
        let key = request.variantKey
        guard variantJobs[key] == nil, memory.image(for: key, nowMs: now()) == nil else { return false }
        let subscriber = ImageSubscriber(id: nextInternalSubscriber)
        nextInternalSubscriber += 1
        Task { _ = try? await self.loadVariant(request, subscriber: subscriber) }
        return true
    }

    /// Ends one subscriber's wait for a variant; the job stops (and leaves the original's download) when nobody else
    /// waits. A resize already running on the pool finishes there, unused.
    func cancelVariant(_ subscriber: ImageSubscriber) {
        guard let key = variantSubscriptions.removeValue(forKey: subscriber), let job = variantJobs[key],
              let continuation = job.subscribers.removeValue(forKey: subscriber) else { return }
        stats.cancelled += 1
        continuation.resume(returning: .failure(.cancelled))
        guard job.subscribers.isEmpty else { return }
        variantJobs[key] = nil
        job.task?.cancel()
        if let original = job.originalSubscriber { cancel(original) }
        if let ticket = job.resizeTicket {
            job.resizeTicket = nil
            resizeSlots.leave(ticket: ticket)
            resizeWaiters.removeValue(forKey: ticket)?.resume(returning: false)
        }
    }

    /// The job: original, then the stored variant or a new one. Every step after an `await` checks that the job is
    /// still the current one (its subscribers may all have gone).
    private func make(_ job: VariantJob, _ request: ImageRequest) async {
        guard let variant = request.variant else { return }
        var originalRequest = request
        originalRequest.variant = nil
        originalRequest.isPrefetch = !job.direct
        let subscriber = ImageSubscriber(id: nextInternalSubscriber)
        nextInternalSubscriber += 1
        job.originalSubscriber = subscriber
        let original: LoadedImage
        do throws(ImageError) {
            original = try await load(originalRequest, subscriber: subscriber)
        } catch {
            return finish(job, .failure(error))
        }
        job.originalSubscriber = nil
        guard variantJobs[job.key] === job else { return }
        let storeKey = VariantKey(originalKey: request.key, validator: original.validator, variant: variant)
        let freshUntil = memory.image(for: request.key, nowMs: now())?.freshUntilMs ?? now()
        // An original nobody may keep (no-store, private, no-cache, or a no-store request) has no kept variants.
        let store = original.mayKeep ? variantStore : nil
        if let stored = await store?.variant(storeKey) {
            stats.variantStoreHits += 1
            return finish(job, .success(keep(stored, request, original, freshUntil: freshUntil, source: .disk)))
        }
        guard variantJobs[job.key] === job, await takeResizeSlot(owner: request.owner, job) else { return }
        let started = ContinuousClock.now
        let made: StoredVariant
        do throws(ImageDecodeError) {
            made = try await decoder.variant(of: original.bytes, variant, maxPixels: config.maxPixels)
            releaseResizeSlot(owner: request.owner)
        } catch .cancelled {
            releaseResizeSlot(owner: request.owner)
            return finish(job, .failure(.cancelled))
        } catch {
            releaseResizeSlot(owner: request.owner)
            stats.variantFailures += 1
            return finish(job, .failure(.decode(error)))
        }
        stats.variantsMade += 1
        stats.variantMs += (ContinuousClock.now - started).milliseconds
        await store?.keep(made, storeKey)
        finish(job, .success(keep(made, request, original, freshUntil: freshUntil, source: .made)))
    }

    /// A resize slot for the job (`ResizeSlots`): at once, or after waiting its turn; false when the job was
    /// cancelled meanwhile.
    private func takeResizeSlot(owner: UInt64, _ job: VariantJob) async -> Bool {
        if resizeSlots.acquire(owner: owner) { return true }
        let ticket = nextResizeTicket
        nextResizeTicket += 1
        resizeSlots.wait(owner: owner, ticket: ticket)
        job.resizeTicket = ticket
        let granted = await withCheckedContinuation { resizeWaiters[ticket] = $0 }
        job.resizeTicket = nil
        return granted
    }

    private func releaseResizeSlot(owner: UInt64) {
        for ticket in resizeSlots.release(owner: owner) { resizeWaiters.removeValue(forKey: ticket)?.resume(returning: true) }
    }

    /// Into the memory tier (fresh as long as its original is), as the answer.
    private func keep(_ variant: StoredVariant, _ request: ImageRequest, _ original: LoadedImage, freshUntil: Int64,
                      source: ImageSource) -> LoadedImage {
        let image = CachedImage(bytes: variant.bytes[...], info: variant.info, url: original.url, freshUntilMs: freshUntil,
                                validator: original.validator)
        if original.mayKeep, freshUntil > now(), memory.insert(image, for: request.variantKey) == .oversized {
            stats.oversized += 1
        }
        return LoadedImage(bytes: variant.bytes[...], info: variant.info, source: source, url: original.url, validator: original.validator)
    }

    private func finish(_ job: VariantJob, _ outcome: Result<LoadedImage, ImageError>) {
        guard variantJobs[job.key] === job else { return }
        variantJobs[job.key] = nil
        for (subscriber, continuation) in job.subscribers {
            variantSubscriptions[subscriber] = nil
            continuation.resume(returning: outcome)
        }
        job.subscribers.removeAll()
    }
}
