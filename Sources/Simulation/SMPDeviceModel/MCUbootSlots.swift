import Crypto

/// MCUboot's two slots of one image and what happens to them at a reset, as MCUboot's swap modes (swap using
/// scratch / move) behave and as Zephyr's img_mgmt reports them. Everything that decides a slot's state lives here:
///
///  1. The primary slot holds the running image. The secondary holds an upload, a pending image, or, after a test
///     swap, the previous image (MCUboot docs/design.md, "Image Swapping").
///  2. The swap MCUboot will do at the next boot is computed from the trailers (bootutil_public.c,
///     `boot_swap_type_multi`): a secondary marked for test → TEST; marked permanent → PERM; a running image that was
///     swapped in for test and not confirmed (image_ok unset) → REVERT; otherwise NONE.
///  3. Reset: TEST swaps and runs the new image unconfirmed; PERM swaps and runs it confirmed; REVERT swaps back and
///     runs the old, confirmed image; MCUboot validates the secondary's SHA256 TLV before it swaps it in and erases
///     a secondary that fails (docs/design.md, "Image validation"), so the device always boots an image.
///  4. The flags of the state list (img_mgmt_state.c, `img_mgmt_state_flags`): the running slot is `active`, and
///     `confirmed` unless in REVERT; the other slot is `pending` in TEST, `pending`+`permanent` in PERM, `confirmed`
///     in REVERT (it holds the image MCUboot will go back to).
///  5. State write (img_mgmt_state.c, `img_mgmt_state_write`): `confirm` without a hash, or with the running image's,
///     confirms the running image (image_ok set: a test image becomes permanent). The secondary's hash marks it for
///     test (`confirm` false) or permanent (`confirm` true). The running image's hash with `confirm` false is refused
///     (IMG_MGMT_ERR_IMAGE_SETTING_TEST_TO_ACTIVE_DENIED); an unknown hash is IMG_MGMT_ERR_HASH_NOT_FOUND; marking the
///     secondary while it holds the image a REVERT would go back to is refused (IMG_MGMT_ERR_IMAGE_CONFIRMATION_DENIED,
///     this model's choice: it would leave the device without a known-good image).
public struct MCUbootSlots: Hashable, Sendable {
    public enum SwapType: Hashable, Sendable { case none, test, permanent, revert }

    enum Mark: Hashable, Sendable { case none, test, permanent }

    public private(set) var primary: SlotImage
    /// A complete image in the secondary slot (nil: erased, or holding an unfinished upload).
    public private(set) var secondary: SlotImage?
    private var mark: Mark = .none
    /// image_ok of the running image.
    public private(set) var primaryConfirmed = true
    public private(set) var resets = 0

    public init(primary: SlotImage) { self.primary = primary }

    /// Rule 2.
    public var swapType: SwapType {
        switch mark {
        case .test: return .test
        case .permanent: return .permanent
        case .none: return primaryConfirmed ? .none : .revert
        }
    }

    /// Whether the secondary slot is in use, so that an upload or an erase would destroy something MCUboot needs.
    public var secondaryInUse: Bool { swapType != .none }

    mutating func secondaryErased() {
        secondary = nil
        mark = .none
    }

    mutating func secondaryWritten(_ image: SlotImage?) {
        secondary = image
        mark = .none
    }

    /// Rule 3.
    public mutating func reset() {
        resets += 1
        switch swapType {
        case .none:
            break
        case .test, .permanent:
            let permanent = swapType == .permanent
            mark = .none
            guard let incoming = secondary, Self.hashIsValid(incoming) else {
                secondary = nil  // MCUboot erases an image that fails validation and boots the primary
                return
            }
            secondary = primary
            primary = incoming
            primaryConfirmed = permanent
        case .revert:
            guard let previous = secondary else { return primaryConfirmed = true }
            secondary = primary
            primary = previous
            primaryConfirmed = true
        }
    }

    /// MCUboot's check before it boots an image: SHA-256 over header, body and protected TLVs equals the TLV.
    static func hashIsValid(_ image: SlotImage) -> Bool {
        image.hashedLength <= image.bytes.count && Array(SHA256.hash(data: image.bytes[..<image.hashedLength])) == image.hash
    }

    public struct SlotState: Hashable, Sendable {
        public var slot: Int
        public var image: SlotImage
        public var active = false, pending = false, confirmed = false, permanent = false
    }

    /// Rule 4.
    public var states: [SlotState] {
        let swap = swapType
        var running = SlotState(slot: 0, image: primary)
        running.active = true
        running.confirmed = swap != .revert
        guard let secondary else { return [running] }
        var other = SlotState(slot: 1, image: secondary)
        other.pending = swap == .test || swap == .permanent
        other.permanent = swap == .permanent
        other.confirmed = swap == .revert
        return [running, other]
    }

    public enum StateWriteRefusal: Error, Hashable, Sendable {
        case hashNotFound, testOfActiveImage, confirmationDenied
    }

    /// Rule 5.
    public mutating func write(hash: [UInt8]?, confirm: Bool) throws(StateWriteRefusal) {
        if hash == nil || hash == primary.hash {
            guard confirm else { throw .testOfActiveImage }
            primaryConfirmed = true
            return
        }
        guard let secondary, secondary.hash == hash else { throw .hashNotFound }
        guard swapType != .revert else { throw .confirmationDenied }
        mark = confirm ? .permanent : .test
    }
}
