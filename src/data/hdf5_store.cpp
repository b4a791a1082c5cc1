// An HDF5 file as an external instance's data (rill::hdf5_resource): a dataset per field, of the
// instance's dimensions reversed (so that HDF5's order, its last dimension fastest, is the
// instance's index-space order), read and written a hyperslab at a time. Debian's HDF5 is built
// thread-safe (one lock inside the library), so I/O threads of several ranks of one process may
// call it at once. The library's own error printing is off; its innermost message ends ours.
#include <fmt/format.h>
#include <hdf5.h>
#include <unistd.h>

#include <array>
#include <map>
#include <vector>

#include "data/durable_files.hpp"
#include "data/external_store.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

hid_t native(element_type t) {
  switch (t) {
    case element_type::i8: return H5T_NATIVE_INT8;
    case element_type::u8: return H5T_NATIVE_UINT8;
    case element_type::i16: return H5T_NATIVE_INT16;
    case element_type::u16: return H5T_NATIVE_UINT16;
    case element_type::i32: return H5T_NATIVE_INT32;
    case element_type::u32: return H5T_NATIVE_UINT32;
    case element_type::i64: return H5T_NATIVE_INT64;
    case element_type::u64: return H5T_NATIVE_UINT64;
    case element_type::f32: return H5T_NATIVE_FLOAT;
    case element_type::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_DOUBLE;
}

std::string type_name(hid_t t) {
  const H5T_class_t c = H5Tget_class(t);
  const std::size_t bits = H5Tget_size(t) * 8;
  if (c == H5T_FLOAT) return fmt::format("{}-bit floats", bits);
  if (c == H5T_INTEGER)
    return fmt::format("{}-bit {}integers", bits, H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned " : "");
  return "values of another class";
}

// Whether a dataset's type holds the values of `want` (the class, size and sign; the byte order
// HDF5 converts).
bool same_values(hid_t file_type, element_type want) {
  const hid_t n = native(want);
  return H5Tget_class(file_type) == H5Tget_class(n) && H5Tget_size(file_type) == H5Tget_size(n) &&
         (H5Tget_class(n) != H5T_INTEGER || H5Tget_sign(file_type) == H5Tget_sign(n));
}

// The innermost message of the calling thread's HDF5 error stack, cleared.
std::string library_error() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto& m = *static_cast<std::string*>(out);
        if (m.empty() && e->desc) m = e->desc;
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "the HDF5 library failed" : message;
}

// Closes an HDF5 handle at the end of a scope.
struct handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~handle() {
    if (id >= 0) close(id);
  }
};

class hdf5_store final : public file_backed_store {
 public:
  hdf5_store(const hdf5_resource& r, const instance_layout& placement, const rect<3>& bounds, int dims,
             io_counters& counters)
      : file_backed_store(r.path, r.mode, fmt::format("HDF5 file '{}'", r.path), bounds),
        dims_(dims),
        counters_(counters) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    if (path_.empty()) throw misuse_error("rill::attach_instance: an hdf5_resource with an empty path");
    for (const field_placement& f : placement.fields)
      if (!r.datasets.contains(f.id)) fail(fmt::format("has no dataset named for field {} of the instance", f.id));
    const bool exists = check_existing(path_, mode_, name_);
    if (mode_ == io_mode::write_discard) {
      const temporary_file t = create_beside(path_, name_);
      ::close(t.fd);
      temporary_ = t.path;
      file_ = H5Fcreate(temporary_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    } else if (exists) {
      file_ = H5Fopen(path_.c_str(), mode_ == io_mode::read_only ? H5F_ACC_RDONLY : H5F_ACC_RDWR, H5P_DEFAULT);
    } else if (mode_ == io_mode::read_write) {
      file_ = H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    } else {
      fail(fmt::format("cannot be opened {}: No such file or directory", mode_name(mode_)));
    }
    if (file_ < 0) {
      const std::string why = library_error();
      if (!temporary_.empty()) ::unlink(temporary_.c_str());
      fail(fmt::format("cannot be opened {} as HDF5: {}", mode_name(mode_), why));
    }
    try {
      for (const auto& [field, ds] : r.datasets) open_dataset(placement, field, ds);
    } catch (...) {
      release();
      if (!temporary_.empty()) ::unlink(temporary_.c_str());
      throw;
    }
    locate();
    counters_.attached.fetch_add(1, std::memory_order_relaxed);
  }

  ~hdf5_store() override {
    if (file_ < 0) return;
    release();
    if (mode_ == io_mode::write_discard) discard_unfinished(temporary_, name_);
  }

  void read(const field_placement& f, const rect<3>& r, std::byte* out) override { move(f, r, out, false); }
  void write(const field_placement& f, const rect<3>& r, const std::byte* in) override {
    check_writable(mode_, name_);
    move(f, r, const_cast<std::byte*>(in), true);
  }

  void close() override {
    if (file_ < 0) return;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const bool failed = release() < 0;
    if (failed) fail(fmt::format("could not be closed, its new data may be lost: {}", library_error()));
    if (mode_ == io_mode::read_only) return;
    sync_file(current_path(), name_, counters_);
    if (mode_ == io_mode::write_discard) replace_with(temporary_, path_, name_, counters_);
  }

 private:
  struct dataset {
    hid_t id;
    element_type type;
    std::string name;
  };

  // The dataset's extents: the bounds' dimensions, last first.
  std::vector<hsize_t> shape() const {
    std::vector<hsize_t> s;
    for (int d = dims_ - 1; d >= 0; --d) s.push_back(static_cast<hsize_t>(bounds_.hi[d] - bounds_.lo[d] + 1));
    return s;
  }
  static std::string show(const std::vector<hsize_t>& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", s[i]);
    return out + ")";
  }

  void open_dataset(const instance_layout& placement, field_id field, const stored_field& ds) {
    const field_placement* f = placement.find(field);
    if (!f) fail(fmt::format("names a dataset ('{}') for field {}, which the instance does not have", ds.name, field));
    if (H5Tget_size(native(ds.type)) != f->bytes)
      fail(fmt::format("dataset '{}' is of {}, but field {} has {} bytes", ds.name, type_name(native(ds.type)), field,
                       f->bytes));
    const std::vector<hsize_t> want = shape();
    const bool present = H5Lexists(file_, ds.name.c_str(), H5P_DEFAULT) > 0;
    hid_t id = -1;
    if (present) {
      id = H5Dopen2(file_, ds.name.c_str(), H5P_DEFAULT);
      if (id < 0) fail(fmt::format("has '{}', but not as a dataset: {}", ds.name, library_error()));
      datasets_[field] = {id, ds.type, ds.name};
      const handle space{H5Dget_space(id), H5Sclose};
      std::vector<hsize_t> has(static_cast<std::size_t>(std::max(0, H5Sget_simple_extent_ndims(space.id))));
      H5Sget_simple_extent_dims(space.id, has.data(), nullptr);
      if (has != want)
        fail(fmt::format("has dataset '{}' of shape {}, but the instance's bounds need {} (its dimensions, last first)",
                         ds.name, show(has), show(want)));
      const handle type{H5Dget_type(id), H5Tclose};
      if (!same_values(type.id, ds.type))
        fail(fmt::format("has dataset '{}' of {}, but field {} holds {}", ds.name, type_name(type.id), field,
                         type_name(native(ds.type))));
      return;
    }
    if (mode_ == io_mode::read_only) fail(fmt::format("has no dataset '{}'", ds.name));
    const handle space{H5Screate_simple(static_cast<int>(want.size()), want.data(), nullptr), H5Sclose};
    const handle links{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
    H5Pset_create_intermediate_group(links.id, 1);
    id = H5Dcreate2(file_, ds.name.c_str(), native(ds.type), space.id, links.id, H5P_DEFAULT, H5P_DEFAULT);
    if (id < 0) fail(fmt::format("cannot have dataset '{}' made: {}", ds.name, library_error()));
    datasets_[field] = {id, ds.type, ds.name};
  }

  void move(const field_placement& f, const rect<3>& r, std::byte* buf, bool writing) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // (per thread: this one may not have opened it)
    if (file_ < 0) fail("is closed (its instance was destroyed)");
    const dataset& ds = datasets_.at(f.id);
    std::vector<hsize_t> start, count;
    for (int d = dims_ - 1; d >= 0; --d) {
      start.push_back(static_cast<hsize_t>(r.lo[d] - bounds_.lo[d]));
      count.push_back(static_cast<hsize_t>(r.hi[d] - r.lo[d] + 1));
    }
    const hsize_t points = r.volume();
    const handle file_space{H5Dget_space(ds.id), H5Sclose};
    const handle memory_space{H5Screate_simple(1, &points, nullptr), H5Sclose};
    herr_t rc = H5Sselect_hyperslab(file_space.id, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
    if (rc >= 0)
      rc = writing ? H5Dwrite(ds.id, native(ds.type), memory_space.id, file_space.id, H5P_DEFAULT, buf)
                   : H5Dread(ds.id, native(ds.type), memory_space.id, file_space.id, H5P_DEFAULT, buf);
    if (rc < 0)
      fail(fmt::format("{} of dataset '{}' ({} points) failed: {}", writing ? "a write" : "a read", ds.name, points,
                       library_error()));
    counters_.count(writing, points * f.bytes);
  }

  // Closes the datasets and the file (HDF5 writes what it buffered then); < 0 if that failed.
  herr_t release() {
    herr_t rc = 0;
    for (auto& [field, ds] : datasets_)
      if (H5Dclose(ds.id) < 0) rc = -1;
    datasets_.clear();
    if (H5Fclose(file_) < 0) rc = -1;
    file_ = -1;
    return rc;
  }

  const int dims_;
  io_counters& counters_;
  hid_t file_ = -1;
  std::map<field_id, dataset> datasets_;
};

}  // namespace

std::unique_ptr<external_store> open_hdf5_store(const hdf5_resource& r, const instance_layout& placement,
                                                const rect<3>& bounds, int dims, io_counters& counters) {
  return std::make_unique<hdf5_store>(r, placement, bounds, dims, counters);
}

}  // namespace rill::detail
