// This machine's kernel: an rtnetlink socket for DCB and an AF_INET datagram socket for
// SIOCETHTOOL, both in the caller's network namespace.
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/unique_fd.h"
#include "probes/roce_qos/qos_kernel.h"

namespace fabkit::probes {
namespace {

class LiveQosKernel : public QosKernel {
 public:
  explicit LiveQosKernel(int timeout_ms) : timeout_ms_(timeout_ms) {}

  Expected<std::vector<uint8_t>> netlink_exchange(const std::vector<uint8_t>& request) override {
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (!fd) return SysError{"socket", errno, "AF_NETLINK NETLINK_ROUTE"};
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd.get(), request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) < 0)
      return SysError{"sendto", errno, "netlink RTM_GETDCB"};
    nlmsghdr req;
    std::memcpy(&req, request.data(), sizeof req);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    std::vector<uint8_t> buf(64 * 1024);
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return SysError{"poll", ETIMEDOUT, "netlink RTM_GETDCB reply"};
      pollfd p{fd.get(), POLLIN, 0};
      int pr = ::poll(&p, 1, static_cast<int>(left));
      if (pr < 0 && errno == EINTR) continue;
      if (pr < 0) return SysError{"poll", errno, "netlink RTM_GETDCB reply"};
      if (pr == 0) return SysError{"poll", ETIMEDOUT, "netlink RTM_GETDCB reply"};
      ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) return SysError{"recv", errno, "netlink RTM_GETDCB reply"};
      if (static_cast<size_t>(n) > buf.size())
        return SysError{"recv", EMSGSIZE, "netlink RTM_GETDCB reply"};
      // Keep only a datagram that answers this request (the socket is ours alone, but be exact).
      if (static_cast<size_t>(n) >= sizeof(nlmsghdr)) {
        nlmsghdr h;
        std::memcpy(&h, buf.data(), sizeof h);
        if (h.nlmsg_seq == req.nlmsg_seq) return std::vector<uint8_t>(buf.begin(), buf.begin() + n);
      }
    }
  }

  int ethtool_ioctl(const std::string& ifname, void* cmd) override {
    if (ifname.empty() || ifname.size() >= IFNAMSIZ) return EINVAL;
    if (!sock_) {
      sock_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      if (!sock_) return errno;
    }
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
    ifr.ifr_data = static_cast<char*>(cmd);
    return ::ioctl(sock_.get(), SIOCETHTOOL, &ifr) == 0 ? 0 : errno;
  }

 private:
  int timeout_ms_;
  UniqueFd sock_;
};

}  // namespace

std::unique_ptr<QosKernel> make_live_qos_kernel(int timeout_ms) {
  return std::make_unique<LiveQosKernel>(timeout_ms);
}

}  // namespace fabkit::probes
