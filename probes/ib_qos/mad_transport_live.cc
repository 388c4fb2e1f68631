// The live MAD transport: libibumad over /dev/infiniband/umad*. One port open per exchange: the
// probe sends three MADs per port, and a held umad fd would outlive a --json run's error paths.
#include <cerrno>
#include <cstring>

#include "common/file_reader.h"
#include "probes/ib_qos/mad_codec.h"
#include "probes/ib_qos/mad_transport.h"

#if FABKIT_HAVE_IBUMAD
#include <infiniband/umad.h>
#endif

namespace fabkit::probes {
namespace {

namespace fs = std::filesystem;

// The SA's well-known QP1 Q_Key (IBA 15.4.2); SMPs go to QP0 with no Q_Key.
constexpr int kQp1Qkey = static_cast<int>(0x80010000u);

std::string umad_devices_missing(const fs::path& dev_root) {
  const fs::path dir = dev_root / "infiniband";
  for (const auto& name : list_dir(dir))
    if (name.rfind("umad", 0) == 0) return "";
  return "unavailable: no " + (dir / "umad*").string() +
         " (no InfiniBand port here, the ib_umad module is not loaded, or a container was "
         "started without the device: modprobe ib_umad, or pass --device " +
         (dir / "umadN").string() + ")";
}

#if FABKIT_HAVE_IBUMAD
class LiveMadTransport : public MadTransport {
 public:
  explicit LiveMadTransport(std::string unavailable) : unavailable_(std::move(unavailable)) {}
  std::string unavailable() const override { return unavailable_; }

  Expected<std::vector<uint8_t>> exchange(const std::string& device, int port,
                                          const MadDestination& to, const std::vector<uint8_t>& mad,
                                          int timeout_ms) override {
    const std::string object = device + ":" + std::to_string(port);
    if (umad_init() < 0) return SysError{"umad_init", EIO, object};
    int fd = umad_open_port(device.c_str(), port);
    if (fd < 0) return SysError{"umad_open_port", -fd, object};
    struct Closer {
      int fd;
      ~Closer() { umad_close_port(fd); }
    } closer{fd};
    const uint8_t mgmt_class = mad[1];
    const uint8_t class_version = mad[2];
    int agent = umad_register(fd, mgmt_class, class_version, 0, nullptr);
    if (agent < 0) return SysError{"umad_register", -agent, object};
    std::vector<uint8_t> buf(umad_size() + kMadSize, 0);
    std::memcpy(umad_get_mad(buf.data()), mad.data(), kMadSize);
    if (to.to_sa)
      umad_set_addr(buf.data(), to.sm_lid, 1, to.sm_sl, kQp1Qkey);
    else
      umad_set_addr(buf.data(), 0xffff, 0, 0, 0);  // directed route: the permissive LID
    if (int rc = umad_send(fd, agent, buf.data(), kMadSize, timeout_ms, 0); rc < 0)
      return SysError{"umad_send", -rc, object};
    int length = kMadSize;
    int rc = umad_recv(fd, buf.data(), &length, timeout_ms);
    if (rc < 0) return SysError{"umad_recv", -rc, object};
    // A send that got no reply comes back with the timeout in its status.
    if (int st = umad_status(buf.data()); st != 0) return SysError{"umad_recv", st, object};
    const auto* reply = static_cast<const uint8_t*>(umad_get_mad(buf.data()));
    return std::vector<uint8_t>(reply, reply + std::min<int>(length, kMadSize));
  }

 private:
  std::string unavailable_;
};
#else
class LiveMadTransport : public MadTransport {
 public:
  explicit LiveMadTransport(std::string unavailable) : unavailable_(std::move(unavailable)) {}
  std::string unavailable() const override {
    return !unavailable_.empty() ? unavailable_
                                 : "unavailable: fabcheck was built without libibumad (install "
                                   "libibumad-dev and rebuild)";
  }
  Expected<std::vector<uint8_t>> exchange(const std::string& device, int port,
                                          const MadDestination&, const std::vector<uint8_t>&,
                                          int) override {
    return SysError{"umad_open_port", ENOSYS, device + ":" + std::to_string(port)};
  }

 private:
  std::string unavailable_;
};
#endif

}  // namespace

std::unique_ptr<MadTransport> make_live_mad_transport(const fs::path& dev_root) {
  return std::make_unique<LiveMadTransport>(umad_devices_missing(dev_root));
}

}  // namespace fabkit::probes
