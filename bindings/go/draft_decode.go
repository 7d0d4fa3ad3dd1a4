package attn

/*
#include "capi_gen.h"
*/
import "C"

// SupportsDraftDecodeMetadataUpdate is vLLM 0.33's supports_draft_decode_metadata_update
// (attn_builder_supports_draft_decode_metadata_update, ABI 1.5): whether
// UpdateDraftDecodeMetadata refreshes this builder's draft decode metadata with capture-safe
// work only.
func (b *Builder) SupportsDraftDecodeMetadataUpdate() (bool, error) {
	if err := b.lib.hasSince("attn_builder_supports_draft_decode_metadata_update", "1.5"); err != nil {
		return false, err
	}
	var v C.int32_t
	err := b.use(func() error {
		return b.lib.takeError(C.gattn_builder_supports_draft_decode_metadata_update(b.lib.api, b.ptr, &v))
	})
	return v != 0, err
}

// UpdateDraftDecodeMetadata is vLLM 0.33's update_draft_decode_metadata(md)
// (attn_update_draft_decode_metadata, ABI 1.5): md (this backend's draft decode build) refreshed
// in place after the speculator advanced its persistent inputs. An Unsupported error names
// vLLM's reason where SupportsDraftDecodeMetadataUpdate is false.
func (b *Builder) UpdateDraftDecodeMetadata(md *Metadata) error {
	if err := b.lib.hasSince("attn_update_draft_decode_metadata", "1.5"); err != nil {
		return err
	}
	if md == nil {
		return invalid("metadata is nil")
	}
	return b.withMetadata(md, func() error {
		return b.lib.takeError(C.gattn_update_draft_decode_metadata(b.lib.api, b.ptr, md.ptr, C.uintptr_t(b.stream)))
	})
}

// withMetadata runs f on the live builder, holding the builder's build lock (Busy when a build
// runs) and md's read lock (md and the metadata it shares fields with must not be closed):
// what every call that reads md through this builder needs.
func (b *Builder) withMetadata(md *Metadata, f func() error) error {
	return b.use(func() error {
		if !b.state.TryLock() {
			return b.busyError()
		}
		defer b.state.Unlock()
		release, err := md.acquire(b)
		if err != nil {
			return err
		}
		defer release()
		return f()
	})
}
