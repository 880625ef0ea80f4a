// See external_data.h. Each data file is opened once and read with pread
// straight into the tensor's raw_data: the bytes are copied once, from the
// file. Every size is checked against the file and the tensor's dims (and
// the limits of ir/graph.h) before anything is allocated, so a hostile
// model cannot make cgc allocate more than its files hold.
#include "onnx_frontend/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "ir/graph.h"

namespace cgc::frontend {
namespace {

namespace fs = std::filesystem;
using TensorVisit = std::function<void(const onnx::TensorProto&)>;

void forEachTensor(const onnx::GraphProto& graph, const TensorVisit& visit);

void forEachTensor(const onnx::NodeProto& node, const TensorVisit& visit) {
  for (const auto& attr : node.attribute()) {
    if (attr.has_t()) visit(attr.t());
    for (const auto& t : attr.tensors()) visit(t);
    if (attr.has_g()) forEachTensor(attr.g(), visit);
    for (const auto& g : attr.graphs()) forEachTensor(g, visit);
  }
}

/// Protobuf bounds the nesting depth (100), and so this recursion.
void forEachTensor(const onnx::GraphProto& graph, const TensorVisit& visit) {
  for (const auto& init : graph.initializer()) visit(init);
  for (const auto& node : graph.node()) forEachTensor(node, visit);
}

void forEachTensor(const onnx::ModelProto& model, const TensorVisit& visit) {
  forEachTensor(model.graph(), visit);
  for (const auto& function : model.functions())
    for (const auto& node : function.node()) forEachTensor(node, visit);
}

bool isExternal(const onnx::TensorProto& t) {
  return t.data_location() == onnx::TensorProto::EXTERNAL;
}

/// `text` with control characters shown as \xNN: diagnostics are one line.
std::string shown(const std::string& text) {
  std::string out;
  for (unsigned char c : text)
    out += c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
  return out;
}

/// A location may name a file in the model's folder or below it, nothing else.
bool staysInFolder(const fs::path& location) {
  if (location.is_absolute() || location.has_root_name() || location.has_root_directory())
    return false;
  return std::none_of(location.begin(), location.end(),
                      [](const fs::path& part) { return part == ".."; });
}

std::string locationOf(const onnx::TensorProto& t) {
  std::string location;
  for (const auto& entry : t.external_data())
    if (entry.key() == "location") location = entry.value();
  return location;
}

/// Where a tensor's bytes lie, as its external_data entries say.
struct Reference {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: the rest of the file
};

class Reader {
 public:
  Reader(const std::string& modelPath, const DiagLocation& where)
      : folder_(fs::path(modelPath).parent_path()), where_(where) {}
  ~Reader() {
    for (const auto& [location, file] : files_) ::close(file.fd);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  /// Checks the tensor's reference and reads its bytes into raw_data, or
  /// with `read` false checks only and returns where its bytes lie.
  Reference load(onnx::TensorProto& tensor, bool read = true);
  /// Reads the bytes at `ref` (checked by load) into the tensor's raw_data.
  void read(onnx::TensorProto& tensor, const Reference& ref);

 private:
  struct File {
    int fd = -1;
    int64_t size = 0;
  };

  template <typename... Args>
  [[noreturn]] void fail(const onnx::TensorProto& t, const std::string& location,
                         fmt::format_string<Args...> format, Args&&... args) const {
    userError(where_, "tensor '{}' (external data file '{}'): {}", shown(t.name()), shown(location),
              fmt::format(format, std::forward<Args>(args)...));
  }

  Reference reference(const onnx::TensorProto& t) const;
  int64_t number(const onnx::TensorProto& t, const std::string& location, const std::string& key,
                 const std::string& value) const;
  const File& open(const onnx::TensorProto& t, const std::string& location);
  int64_t tensorBytes(const onnx::TensorProto& t, const std::string& location) const;

  fs::path folder_;
  DiagLocation where_;
  std::map<std::string, File> files_;
};

int64_t Reader::number(const onnx::TensorProto& t, const std::string& location,
                       const std::string& key, const std::string& value) const {
  int64_t n = -1;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (value.empty() || ec != std::errc() || ptr != end || n < 0)
    fail(t, location, "{} '{}' is not a non-negative integer", key, shown(value));
  return n;
}

Reference Reader::reference(const onnx::TensorProto& t) const {
  Reference ref;
  ref.location = locationOf(t);
  if (ref.location.empty())
    userError(where_,
              "tensor '{}' is stored in an external data file but names none (its "
              "location is empty)",
              shown(t.name()));
  if (!staysInFolder(ref.location))
    fail(t, ref.location,
         "the location must be a relative path inside the model's folder (not absolute, no "
         "'..')");
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "offset") ref.offset = number(t, ref.location, "offset", entry.value());
    if (entry.key() == "length") ref.length = number(t, ref.location, "length", entry.value());
  }
  return ref;
}

const Reader::File& Reader::open(const onnx::TensorProto& t, const std::string& location) {
  const auto known = files_.find(location);
  if (known != files_.end()) return known->second;
  const fs::path path = folder_ / location;
  // O_NONBLOCK: a FIFO named as the data file must not hang the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(t, location, "cannot open {}: {}", shown(path.string()), std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    fail(t, location, "{} is not a regular file", shown(path.string()));
  }
  return files_[location] = File{fd, static_cast<int64_t>(info.st_size)};
}

/// The tensor's size in bytes from its dims and element type, within the
/// limits on constant data.
int64_t Reader::tensorBytes(const onnx::TensorProto& t, const std::string& location) const {
  ir::TensorType type;
  type.dtype = static_cast<DType>(t.data_type());
  if (dtypeSize(type.dtype) == 0) fail(t, location, "unsupported element type {}", t.data_type());
  for (int64_t d : t.dims()) {
    if (d < 0) fail(t, location, "negative dimension {}", d);
    type.shape.push_back(d);
  }
  const std::string tooLarge = type.checkSize(ir::kMaxConstantBytes);
  if (!tooLarge.empty()) fail(t, location, "{} for constant data", tooLarge);
  return type.bytes();
}

Reference Reader::load(onnx::TensorProto& t, bool read) {
  Reference ref = reference(t);
  const int64_t bytes = tensorBytes(t, ref.location);
  if (ref.length >= 0 && ref.length != bytes)
    fail(t, ref.location, "length {} does not match the tensor's size, {} bytes", ref.length,
         bytes);
  const File& file = open(t, ref.location);
  if (ref.offset > file.size)
    fail(t, ref.location, "offset {} is past the end of the file ({} bytes)", ref.offset,
         file.size);
  const int64_t rest = file.size - ref.offset;
  if (ref.length < 0 && rest != bytes)
    fail(t, ref.location,
         "the file holds {} bytes from offset {} (no length given), not the tensor's {}", rest,
         ref.offset, bytes);
  if (bytes > rest)
    fail(t, ref.location, "the file is {} bytes, too short for offset {} + length {} (truncated)",
         file.size, ref.offset, bytes);
  ref.length = bytes;
  if (read) this->read(t, ref);
  return ref;
}

void Reader::read(onnx::TensorProto& t, const Reference& ref) {
  const int64_t bytes = ref.length;
  const File& file = open(t, ref.location);
  std::string& raw = *t.mutable_raw_data();
  raw.resize(static_cast<size_t>(bytes));
  for (int64_t done = 0; done < bytes;) {
    const ssize_t got = ::pread(file.fd, raw.data() + done, static_cast<size_t>(bytes - done),
                                static_cast<off_t>(ref.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      fail(t, ref.location, "cannot read {} bytes at offset {}: {}", bytes - done,
           ref.offset + done, got < 0 ? std::strerror(errno) : "the file ended");
    done += got;
  }
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
}

}  // namespace

struct ExternalData::Deferred {
  explicit Deferred(const std::string& modelPath) : reader(modelPath, {modelPath, "", ""}) {}
  Reader reader;
  std::map<const onnx::TensorProto*, Reference> tensors;
};

ExternalData::ExternalData(onnx::ModelProto& model, const std::string& modelPath, bool defer)
    : deferred_(std::make_unique<Deferred>(modelPath)) {
  std::set<const onnx::TensorProto*> deferrable;  // the graph's external initializers
  if (defer)
    for (const auto& init : model.graph().initializer())
      if (isExternal(init)) deferrable.insert(&init);
  // The walk is written once, over const protos; the tensors belong to the
  // (non-const) model, so writing them through const_cast is sound.
  forEachTensor(model, [&](const onnx::TensorProto& t) {
    if (!isExternal(t)) return;
    auto& tensor = const_cast<onnx::TensorProto&>(t);
    const Reference ref = deferred_->reader.load(tensor, !deferrable.count(&t));
    if (!deferrable.count(&t)) return;
    if (ref.length < kDeferredBytes) {
      deferred_->reader.read(tensor, ref);
      return;
    }
    // Until read, a placeholder byte: ONNX's checker wants a value field and
    // does not measure raw_data; shape inference reads no tensor this large.
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::DEFAULT);
    tensor.set_raw_data(std::string(1, '\0'));
    deferred_->tensors.emplace(&t, ref);
  });
}

ExternalData::~ExternalData() = default;

void ExternalData::read(onnx::TensorProto& tensor) {
  const auto it = deferred_->tensors.find(&tensor);
  if (it == deferred_->tensors.end()) return;
  deferred_->reader.read(tensor, it->second);
  deferred_->tensors.erase(it);
}

void loadExternalData(onnx::ModelProto& model, const std::string& modelPath) {
  const ExternalData everything(model, modelPath, false);  // reads every tensor
}

std::vector<ExternalDataFile> externalDataFiles(const onnx::ModelProto& model,
                                                const std::string& modelPath) {
  std::vector<ExternalDataFile> files;
  const fs::path folder = fs::path(modelPath).parent_path();
  forEachTensor(model, [&](const onnx::TensorProto& t) {
    if (!isExternal(t)) return;
    const std::string location = locationOf(t);
    auto it = std::find_if(files.begin(), files.end(),
                           [&](const ExternalDataFile& f) { return f.location == location; });
    if (it == files.end()) {
      ExternalDataFile file{location, 0, -1};
      std::error_code error;
      const fs::path path = folder / location;
      if (!location.empty() && staysInFolder(location) && fs::is_regular_file(path, error))
        file.bytes = static_cast<int64_t>(fs::file_size(path, error));
      if (error) file.bytes = -1;
      it = files.insert(files.end(), file);
    }
    ++it->tensors;
  });
  return files;
}

}  // namespace cgc::frontend
