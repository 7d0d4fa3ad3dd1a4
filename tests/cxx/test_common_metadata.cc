// src/core's CommonMetadata accessors for vLLM 0.33.0's fields: which host lengths a builder
// reads (host_seq_lens(): the exact mirror when known, else 0.33's upper bound), the DCP
// counterpart and causal_for(), on batches built directly (no ABI in between).
#include <cstdio>
#include <climits>
#include <cstdint>
#include <string>

#include "core/common_metadata.h"
#include "core/error.h"
#include "core/tensor.h"

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

const attn::Device kHost{attn::kDeviceCPU, 0};
const attn::Device kCuda{attn::kDeviceCUDA, 0};  // never dereferenced here

int32_t qsl[4] = {0, 2, 4, 5};
int32_t seq[3] = {10, 20, 5};
int32_t bound[3] = {12, 20, 5};
int32_t dcp[3] = {5, 10, 3};
int32_t dcp_bound[3] = {6, 10, 3};
int32_t causal[3] = {1, 0, 1};

attn::CommonMetadata batch(bool seq_on_device) {
  attn::CommonMetadata c;
  c.num_reqs = 3;
  c.num_actual_tokens = 5;
  c.max_query_len = 2;
  c.max_seq_len = 20;
  c.query_start_loc = attn::make_vector(qsl, seq_on_device ? kCuda : kHost, attn::kInt32, 4);
  c.query_start_loc_cpu = attn::make_vector(qsl, kHost, attn::kInt32, 4);
  c.seq_lens = attn::make_vector(seq, seq_on_device ? kCuda : kHost, attn::kInt32, 3);
  return c;
}

attn::CommonLimits utility_limits() {
  attn::CommonLimits lim;
  lim.require_tables = false;
  return lim;
}

void test_host_seq_lens() {
  // a host batch: seq_lens itself is the exact host copy, the bound only checked
  attn::CommonMetadata c = batch(false);
  c.seq_lens_cpu_upper_bound = attn::make_vector(bound, kHost, attn::kInt32, 3);
  attn::validate(c, utility_limits());
  CHECK(c.host_seq_lens() == seq, "host batch: host_seq_lens() is not seq_lens");
  CHECK(c.seq_lens_exact(), "host batch: not exact");
  CHECK(c.host_max_seq_len == 20, "host_max_seq_len=%lld", (long long)c.host_max_seq_len);

  // a device batch with the exact mirror and the bound: the mirror
  c = batch(true);
  c.seq_lens_cpu = attn::make_vector(seq, kHost, attn::kInt32, 3);
  c.seq_lens_cpu_upper_bound = attn::make_vector(bound, kHost, attn::kInt32, 3);
  attn::validate(c, utility_limits());
  CHECK(c.host_seq_lens() == seq, "mirror + bound: host_seq_lens() is not seq_lens_cpu");
  CHECK(c.seq_lens_exact(), "mirror + bound: not exact");

  // a device batch with only 0.33's bound: the bound, not exact
  c = batch(true);
  c.seq_lens_cpu_upper_bound = attn::make_vector(bound, kHost, attn::kInt32, 3);
  attn::validate(c, utility_limits());
  CHECK(c.host_seq_lens() == bound, "bound only: host_seq_lens() is not the bound");
  CHECK(!c.seq_lens_exact(), "bound only: claims exact");

  // neither: null, and refused where a builder needs host lengths
  c = batch(true);
  attn::validate(c, utility_limits());
  CHECK(c.host_seq_lens() == nullptr, "no host lengths: not null");
  CHECK(!c.seq_lens_exact(), "no host lengths: claims exact");
  attn::CommonLimits need = utility_limits();
  need.require_host_seq_lens = true;
  bool refused = false;
  try {
    attn::validate(c, need);
  } catch (const attn::Error& e) {
    refused = std::string(e.what()).find("seq_lens_cpu_upper_bound") != std::string::npos;
  }
  CHECK(refused, "no host lengths with require_host_seq_lens: not refused naming the bound");
}

void test_dcp_and_causal() {
  attn::CommonMetadata c = batch(true);
  c.seq_lens_cpu = attn::make_vector(seq, kHost, attn::kInt32, 3);
  c.dcp_local_seq_lens = attn::make_vector(dcp, kCuda, attn::kInt32, 3);
  c.dcp_local_seq_lens_cpu_upper_bound = attn::make_vector(dcp_bound, kHost, attn::kInt32, 3);
  attn::validate(c, utility_limits());
  CHECK(c.host_dcp_local_seq_lens() == dcp_bound, "DCP bound only: not the bound");
  c.dcp_local_seq_lens_cpu = attn::make_vector(dcp, kHost, attn::kInt32, 3);
  attn::validate(c, utility_limits());
  CHECK(c.host_dcp_local_seq_lens() == dcp, "DCP mirror + bound: not the mirror");

  CHECK(c.causal_for(1), "scalar causal: request 1 not causal");
  c.causal = true;
  c.causal_per_request = attn::make_vector(causal, kHost, attn::kInt32, 3);
  CHECK(c.causal_for(0) && !c.causal_for(1) && c.causal_for(2), "per-request causal not read");
}

// What check_device_seq_lens refuses: lengths a builder copied from the device (vLLM 0.33's
// seq_lens.cpu(): FLASHINFER with speculative tokens, ROCM_AITER_FA, the local-attention virtual
// batches) are checked as a mirror before they size anything; and a tensor in host memory that
// disagrees with its mirror is refused by validate (issue 32: "mirror right, tensor garbage").
std::string refusal(void (*f)(attn::CommonMetadata&), attn::CommonMetadata& c) {
  try {
    f(c);
  } catch (const attn::Error& e) {
    return e.message();
  }
  return "";
}

int32_t copied[3];

void check_copied(attn::CommonMetadata& c) { attn::check_device_seq_lens(c, copied); }

void test_device_values_checked() {
  attn::CommonMetadata c = batch(true);
  c.seq_lens_cpu_upper_bound = attn::make_vector(bound, kHost, attn::kInt32, 3);
  attn::CommonLimits lim = utility_limits();
  lim.max_model_len = 64;
  attn::validate(c, lim);
  copied[0] = 10, copied[1] = 20, copied[2] = 5;
  CHECK(refusal(check_copied, c).empty(), "exact values refused: %s", refusal(check_copied, c).c_str());
  const struct {
    int32_t row, value;
    const char* message;
  } cases[] = {
      {0, INT32_MAX, "common->seq_lens[0]=2147483647 (read from the device) exceeds common->max_seq_len=20"},
      {1, -3, "common->seq_lens[1]=-3 (read from the device) is negative"},
      {1, 1, "common->seq_lens[1]=1 (read from the device) is less than its query length 2"},
      {0, 13, "common->seq_lens[0]=13 (read from the device) exceeds its upper bound common->seq_lens_cpu_upper_bound[0]=12"},
  };
  for (const auto& k : cases) {
    copied[0] = 10, copied[1] = 20, copied[2] = 5;
    copied[k.row] = k.value;
    const std::string m = refusal(check_copied, c);
    CHECK(m.find(k.message) != std::string::npos, "copied %d at row %d: \"%s\"", k.value, k.row,
          m.c_str());
  }
  // the block table and max_model_len a builder's validation checked against
  int32_t table[3 * 2] = {1, 2, 3, 4, 5, 6};
  c.block_table_tensor = attn::make_matrix(table, kCuda, attn::kInt32, 3, 2, 2);
  c.max_seq_len = 100;
  c.seq_lens_cpu_upper_bound.reset();
  lim.block_size = 16;
  lim.require_tables = false;
  attn::validate(c, lim);
  copied[0] = 33, copied[1] = 20, copied[2] = 5;
  std::string m = refusal(check_copied, c);
  CHECK(m.find("common->block_table_tensor has 2 columns but request 0 needs cdiv(common->seq_lens[0]=33 (read from the device), block_size=16) blocks") != std::string::npos, "%s", m.c_str());
  copied[0] = 65;
  m = refusal(check_copied, c);
  CHECK(m.find("exceeds config->max_model_len=64") != std::string::npos, "%s", m.c_str());

  // a host batch whose tensor disagrees with its mirror
  int32_t garbage[3] = {10, INT32_MAX, 5};
  attn::CommonMetadata h = batch(false);
  h.seq_lens = attn::make_vector(garbage, kHost, attn::kInt32, 3);
  h.seq_lens_cpu = attn::make_vector(seq, kHost, attn::kInt32, 3);
  m = refusal([](attn::CommonMetadata& x) { attn::validate(x, utility_limits()); }, h);
  CHECK(m == "common->seq_lens[1]=2147483647 differs from its host mirror common->seq_lens_cpu[1]=20",
        "%s", m.c_str());
  int32_t qsl_garbage[4] = {0, 2, 3, 5};
  h = batch(false);
  h.query_start_loc = attn::make_vector(qsl_garbage, kHost, attn::kInt32, 4);
  m = refusal([](attn::CommonMetadata& x) { attn::validate(x, utility_limits()); }, h);
  CHECK(m == "common->query_start_loc[2]=3 differs from its host mirror common->query_start_loc_cpu[2]=4",
        "%s", m.c_str());
  // the same memory for both, or a tensor on a device: nothing to compare here
  h = batch(false);
  h.seq_lens_cpu = h.seq_lens;
  CHECK(refusal([](attn::CommonMetadata& x) { attn::validate(x, utility_limits()); }, h).empty(),
        "one memory for tensor and mirror refused");
}

}  // namespace

int main() {
  test_host_seq_lens();
  test_dcp_and_causal();
  test_device_values_checked();
  if (failures != 0) std::fprintf(stderr, "%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
