#include "core/registry.h"

#include <mutex>

#include "core/error.h"

namespace attn {

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

namespace {

/// Calls f(name) for a backend's own name and each of its vLLM names (Backend::vllm_names(),
/// comma-separated), until f returns true; whether one did.
template <class F>
bool any_name_of(const Backend& b, F&& f) {
  if (f(std::string_view(b.name()))) return true;
  const char* list = b.vllm_names();
  std::string_view rest = list != nullptr ? std::string_view(list) : std::string_view();
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (!name.empty() && f(name)) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

bool answers_to(const Backend& b, std::string_view name) {
  return any_name_of(b, [&](std::string_view n) { return n == name; });
}

/// Error(kInvalidArgument) when a name of `b` (its own or a vLLM name) is one of `other`'s.
void check_distinct(const Backend& b, const Backend& other, const char* what) {
  any_name_of(b, [&](std::string_view n) {
    if (answers_to(other, n))
      invalid("backend '", b.name(), "': the name '", n, "' ", what, " backend '", other.name(),
              "' (its own name or one of its vLLM names)");
    return false;
  });
}

}  // namespace

void Registry::add(const std::vector<std::shared_ptr<const Backend>>& backends,
                   const void* owner) {
  std::unique_lock lock(mutex_);
  for (size_t i = 0; i < backends.size(); ++i) {
    const std::string& name = backends[i]->name();
    for (const Entry& e : entries_)
      if (e.backend->name() == name) invalid("backend '", name, "' is already registered");
    for (size_t j = 0; j < i; ++j)
      if (backends[j]->name() == name) invalid("backend '", name, "' is listed twice");
    // A name resolves to one backend: no name of one is a name of another.
    for (const Entry& e : entries_) check_distinct(*backends[i], *e.backend, "is already a name of");
    for (size_t j = 0; j < i; ++j) check_distinct(*backends[i], *backends[j], "is also a name of");
  }
  for (const auto& b : backends) entries_.push_back(Entry{b, owner});
}

void Registry::remove_owner(const void* owner) {
  std::unique_lock lock(mutex_);
  for (const Entry& e : entries_)
    if (e.owner == owner && e.backend->live_builders() > 0)
      fail(Status::kBusy, "backend '", e.backend->name(), "' still has ",
           e.backend->live_builders(), " live builder(s) (or builders being created); destroy them first");
  std::vector<Entry> kept;
  for (Entry& e : entries_)
    if (e.owner != owner) kept.push_back(std::move(e));
  entries_ = std::move(kept);
}

size_t Registry::count() const {
  std::shared_lock lock(mutex_);
  return entries_.size();
}

std::shared_ptr<const Backend> Registry::at(size_t index) const {
  std::shared_lock lock(mutex_);
  return index < entries_.size() ? entries_[index].backend : nullptr;
}

const std::shared_ptr<const Backend>* Registry::find_locked(std::string_view name) const {
  for (const Entry& e : entries_)
    if (answers_to(*e.backend, name)) return &e.backend;
  return nullptr;
}

std::shared_ptr<const Backend> Registry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const auto* b = find_locked(name);
  return b ? *b : nullptr;
}

Registry::Pin::Pin(std::shared_ptr<const Backend> backend) : backend_(std::move(backend)) {
  if (backend_) backend_->live_builders_.fetch_add(1);
}

Registry::Pin::~Pin() {
  if (backend_) backend_->live_builders_.fetch_sub(1);
}

Registry::Pin Registry::pin(std::string_view name) const {
  std::shared_lock lock(mutex_);  // remove_owner's unique lock cannot interleave with the count
  const auto* b = find_locked(name);
  return b ? Pin(*b) : Pin();
}

std::string Registry::names() const {
  std::shared_lock lock(mutex_);
  std::string s;
  for (const Entry& e : entries_) {
    if (!s.empty()) s += ", ";
    s += e.backend->name();
  }
  return s;
}

}  // namespace attn
