// The MLA chunked-context ops (src/ops/mla_context_chunks.cc) below the builder: their refusals
// (a workspace below the alignment, capacities too small for the batch, missing scratch), a
// query_start_loc that does not start at 0 (the builder passes the prefills' slice of the
// batch's), and the host tensors of a batch without context. Links the library's objects.
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/batch_ops.h"

namespace {

int failures = 0;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      ++failures;                                                 \
      std::fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                          \
      std::fprintf(stderr, "\n");                                 \
    }                                                             \
  } while (0)

using namespace attn;

struct HostPlan {
  std::vector<int32_t> offsets, request, start, len, seq_lens, chunk[4];
  ops::MlaChunkHostOut out;
  explicit HostPlan(size_t n) : offsets(n + 1), request(n), start(n), len(n), seq_lens(n) {
    for (auto& c : chunk) c.assign(n + 1, -1);
    out.chunk_entry_offsets = offsets.data();
    out.entry_request = request.data();
    out.entry_start = start.data();
    out.entry_len = len.data();
    out.seq_lens = seq_lens.data();
    out.request_start = chunk[0].data();
    out.token_start = chunk[1].data();
    out.continuation_token_end = chunk[2].data();
    out.is_continuation = chunk[3].data();
  }
};

ops::MlaChunkParams params(int64_t workspace, int32_t block, int64_t capacity) {
  ops::MlaChunkParams p;
  p.workspace_size = workspace;
  p.block_size = block;
  p.max_chunks = p.max_entries = capacity;
  p.max_tokens = p.max_local_tokens = 1 << 20;
  return p;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

}  // namespace

int main() {
  const int32_t ctx[3] = {40, 200, 50};
  const int32_t qsl[4] = {5, 9, 12, 17};  // the prefills' slice: starts at 5
  {
    HostPlan h(16);
    const std::string m = refusal(
        [&] { ops::mla_context_chunk_plan(ctx, qsl, 3, params(10, 16, 16), h.out, "TRITON_MLA"); });
    CHECK(m == "TRITON_MLA: the chunked prefill workspace (10 rows) is smaller than the context "
               "chunk alignment (16 rows; vLLM asserts max_context_chunk > 0)",
          "%s", m.c_str());
  }
  {
    HostPlan h(16);
    const std::string m =
        refusal([&] { ops::mla_context_chunk_plan(ctx, qsl, 3, params(128, 16, 2), h.out); });
    CHECK(m == "the batch's chunked context needs more than the 2 entries the builder's buffers "
               "hold (sized from max_num_seqs and max_model_len)",
          "%s", m.c_str());
  }
  {
    HostPlan h(16);
    h.out.entry_len = nullptr;
    const std::string m =
        refusal([&] { ops::mla_context_chunk_plan(ctx, qsl, 3, params(128, 16, 16), h.out); });
    CHECK(m == "mla_context_chunk_plan: the plan scratch is NULL", "%s", m.c_str());
  }
  {
    // tests/c/test_mla_chunks.c's split with a continuation, from a slice starting at 5
    HostPlan h(16);
    const ops::MlaChunkCounts n =
        ops::mla_context_chunk_plan(ctx, qsl, 3, params(128, 16, 16), h.out);
    CHECK(n.num_chunks == 3 && n.num_entries == 4 && n.num_tokens == 290, "%lld %lld %lld",
          (long long)n.num_chunks, (long long)n.num_entries, (long long)n.num_tokens);
    const int32_t token_start[3] = {0, 4, 7}, cont_end[3] = {4, 7, 12}, is_cont[3] = {0, 1, 0};
    for (int c = 0; c < 3; ++c)
      CHECK(h.chunk[1][c] == token_start[c] && h.chunk[2][c] == cont_end[c] &&
                h.chunk[3][c] == is_cont[c],
            "chunk %d: token_start %d, continuation_token_end %d, is_continuation %d", c,
            h.chunk[1][c], h.chunk[2][c], h.chunk[3][c]);
    // the tensors from the same slice: query_start_loc per chunk is relative to its first request
    std::vector<int32_t> starts(4, -1), q(7, -1), cu(7, -1), tts(290, -1),
        scratch(3 * 17 + 3 * 16);
    ops::MlaChunkTensors t;
    t.starts = starts.data();
    t.query_start_loc = q.data();
    t.cu_seq_lens = cu.data();
    t.token_to_seq = tts.data();
    t.chunk_entry_offsets = scratch.data();
    t.chunk_token_offsets = scratch.data() + 17;
    t.chunk_local_token_offsets = scratch.data() + 34;
    t.entry_request = scratch.data() + 51;
    t.entry_start = t.entry_request + 16;
    t.entry_len = t.entry_start + 16;
    ops::mla_context_chunk_tensors(ops::Exec{}, qsl, ctx, 3, params(128, 16, 16), n, t);
    const int32_t want_q[7] = {0, 4, 7, 0, 3, 0, 5}, want_cu[7] = {0, 40, 120, 0, 120, 0, 50};
    const int32_t want_starts[4] = {0, 0, 80, 0};
    CHECK(std::memcmp(q.data(), want_q, sizeof want_q) == 0, "query_start_loc");
    CHECK(std::memcmp(cu.data(), want_cu, sizeof want_cu) == 0, "cu_seq_lens");
    CHECK(std::memcmp(starts.data(), want_starts, sizeof want_starts) == 0, "starts");
    CHECK(tts[39] == 0 && tts[40] == 1 && tts[119] == 1 && tts[120] == 0 && tts[289] == 0,
          "token_to_seq");
  }
  {
    // no context: no chunks, and the tensors op writes nothing
    const int32_t none[2] = {0, 0}, q2[3] = {0, 4, 9};
    HostPlan h(4);
    const ops::MlaChunkCounts n =
        ops::mla_context_chunk_plan(none, q2, 2, params(64, 16, 4), h.out);
    CHECK(n.num_chunks == 0 && n.num_entries == 0, "chunks without context");
    std::vector<int32_t> cu(4, -1), scratch(64);
    ops::MlaChunkTensors t;
    t.cu_seq_lens = cu.data();
    t.chunk_entry_offsets = t.chunk_token_offsets = t.chunk_local_token_offsets = scratch.data();
    t.entry_request = t.entry_start = t.entry_len = scratch.data() + 8;
    ops::mla_context_chunk_tensors(ops::Exec{}, q2, none, 2, params(64, 16, 4), n, t);
    CHECK(cu[0] == -1, "cu_seq_lens written without context: %d", cu[0]);
  }
  if (failures == 0) std::printf("test_mla_context_chunks: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
