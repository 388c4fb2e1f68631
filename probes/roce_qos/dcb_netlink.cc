// Netlink framing (include/uapi/linux/netlink.h): a message is nlmsghdr, then the family header
// (struct dcbmsg), then attributes (struct nlattr, payload padded to 4 bytes). DCB nests with
// nla_nest_start_noflag, so NLA_F_NESTED is not set and nesting is known from the type.
#include "probes/roce_qos/dcb_netlink.h"

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace fabkit::probes {
namespace {

constexpr size_t kAlign = 4;
size_t align4(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

class Writer {
 public:
  explicit Writer(uint16_t type, uint16_t flags, uint32_t seq) {
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = seq;
    put(&h, sizeof h);
  }
  void put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    buf_.resize(align4(buf_.size()), 0);
  }
  void attr(uint16_t type, const void* p, size_t n) {
    nlattr a{};
    a.nla_len = static_cast<uint16_t>(sizeof a + n);
    a.nla_type = type;
    buf_.insert(buf_.end(), reinterpret_cast<uint8_t*>(&a),
                reinterpret_cast<uint8_t*>(&a) + sizeof a);
    put(p, n);
  }
  void attr_u8(uint16_t type, uint8_t v) { attr(type, &v, 1); }
  size_t nest_start(uint16_t type) {
    size_t at = buf_.size();
    attr(type, nullptr, 0);
    return at;
  }
  void nest_end(size_t at) {
    uint16_t len = static_cast<uint16_t>(buf_.size() - at);
    std::memcpy(&buf_[at], &len, sizeof len);
  }
  std::vector<uint8_t> done() {
    uint32_t len = static_cast<uint32_t>(buf_.size());
    std::memcpy(&buf_[0], &len, sizeof len);
    return std::move(buf_);
  }

 private:
  std::vector<uint8_t> buf_;
};

// Walks the attributes in [p, p+n); calls f(type, payload, payload_len); false when one overruns.
template <typename F>
bool for_each_attr(const uint8_t* p, size_t n, F f) {
  size_t off = 0;
  while (off + sizeof(nlattr) <= n) {
    nlattr a;
    std::memcpy(&a, p + off, sizeof a);
    if (a.nla_len < sizeof a || off + a.nla_len > n) return false;
    f(a.nla_type & NLA_TYPE_MASK, p + off + sizeof a, a.nla_len - sizeof a);
    off += align4(a.nla_len);
  }
  return off >= n || n - off < sizeof(nlattr);
}

template <typename T>
T read_struct(const uint8_t* p, size_t n) {
  T v{};  // shorter payloads (older kernels) leave the rest zero
  std::memcpy(&v, p, n < sizeof v ? n : sizeof v);
  return v;
}

void parse_ieee(const uint8_t* p, size_t n, DcbState& out, bool& ok) {
  ok &= for_each_attr(p, n, [&](uint16_t type, const uint8_t* q, size_t len) {
    if (type == DCB_ATTR_IEEE_PFC) {
      auto pfc = read_struct<ieee_pfc>(q, len);
      out.pfc_source = "ieee";
      out.pfc_enabled = pfc.pfc_en;
      out.pfc_cap = pfc.pfc_cap;
      out.pfc_delay = pfc.delay;
      out.pfc_requests.assign(pfc.requests, pfc.requests + IEEE_8021QAZ_MAX_TCS);
      out.pfc_indications.assign(pfc.indications, pfc.indications + IEEE_8021QAZ_MAX_TCS);
    } else if (type == DCB_ATTR_IEEE_ETS) {
      auto ets = read_struct<ieee_ets>(q, len);
      out.prio_tc.assign(ets.prio_tc, ets.prio_tc + IEEE_8021QAZ_MAX_TCS);
      out.tc_tx_bw.assign(ets.tc_tx_bw, ets.tc_tx_bw + IEEE_8021QAZ_MAX_TCS);
      out.tc_tsa.assign(ets.tc_tsa, ets.tc_tsa + IEEE_8021QAZ_MAX_TCS);
    } else if (type == DCB_ATTR_IEEE_APP_TABLE) {
      out.apps.clear();
      ok &= for_each_attr(q, len, [&](uint16_t t, const uint8_t* r, size_t l) {
        if (t != DCB_ATTR_IEEE_APP || l < sizeof(dcb_app)) return;
        auto app = read_struct<dcb_app>(r, l);
        out.apps.push_back({app.selector, app.protocol, app.priority});
      });
    }
  });
}

void parse_cee_pfc(const uint8_t* p, size_t n, DcbState& out, bool& ok) {
  int mask = 0;
  bool any = false;
  ok &= for_each_attr(p, n, [&](uint16_t type, const uint8_t* q, size_t len) {
    if (type >= DCB_PFC_UP_ATTR_0 && type <= DCB_PFC_UP_ATTR_7 && len >= 1) {
      any = true;
      if (q[0]) mask |= 1 << (type - DCB_PFC_UP_ATTR_0);
    }
  });
  if (any) {
    out.pfc_source = "cee";
    out.pfc_enabled = mask;
  }
}

}  // namespace

std::vector<uint8_t> build_dcb_request(uint8_t cmd, const std::string& ifname, uint32_t seq) {
  Writer w(RTM_GETDCB, NLM_F_REQUEST, seq);
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = cmd;
  w.put(&d, sizeof d);
  w.attr(DCB_ATTR_IFNAME, ifname.c_str(), ifname.size() + 1);
  if (cmd == DCB_CMD_PFC_GCFG) {  // dcbnl_getpfccfg answers the priorities the request names
    size_t nest = w.nest_start(DCB_ATTR_PFC_CFG);
    w.attr(DCB_PFC_UP_ATTR_ALL, nullptr, 0);
    w.nest_end(nest);
  }
  return w.done();
}

DcbReplyStatus parse_dcb_reply(const std::vector<uint8_t>& bytes, uint8_t cmd, uint32_t seq,
                               DcbState& out) {
  DcbReplyStatus st;
  size_t off = 0;
  bool answered = false;
  while (off + sizeof(nlmsghdr) <= bytes.size()) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.nlmsg_len < sizeof h || off + h.nlmsg_len > bytes.size()) {
      st.malformed = "a netlink message overruns the reply (" + std::to_string(h.nlmsg_len) +
                     " bytes at offset " + std::to_string(off) + ")";
      return st;
    }
    const uint8_t* body = bytes.data() + off + NLMSG_HDRLEN;
    size_t body_len = h.nlmsg_len - NLMSG_HDRLEN;
    if (h.nlmsg_seq == seq && h.nlmsg_type == NLMSG_ERROR) {
      if (body_len < sizeof(int)) {
        st.malformed = "NLMSG_ERROR without an error code";
        return st;
      }
      int err;
      std::memcpy(&err, body, sizeof err);
      st.kernel_errno = -err;  // 0 is an ACK
      return st;
    }
    if (h.nlmsg_seq == seq && h.nlmsg_type == RTM_GETDCB) {
      if (body_len < sizeof(dcbmsg)) {
        st.malformed = "RTM_GETDCB reply without a dcbmsg header";
        return st;
      }
      dcbmsg d;
      std::memcpy(&d, body, sizeof d);
      if (d.cmd != cmd) {
        st.malformed =
            "reply to DCB command " + std::to_string(d.cmd) + ", expected " + std::to_string(cmd);
        return st;
      }
      bool ok = true;
      const uint8_t* attrs = body + NLMSG_ALIGN(sizeof(dcbmsg));
      size_t attrs_len = body_len - NLMSG_ALIGN(sizeof(dcbmsg));
      ok &= for_each_attr(attrs, attrs_len, [&](uint16_t type, const uint8_t* q, size_t len) {
        if (type == DCB_ATTR_IEEE) parse_ieee(q, len, out, ok);
        if (type == DCB_ATTR_PFC_CFG) parse_cee_pfc(q, len, out, ok);
        if (type == DCB_ATTR_DCBX && len >= 1) out.dcbx = q[0];
      });
      if (!ok) {
        st.malformed = "an attribute overruns its container in the RTM_GETDCB reply";
        return st;
      }
      answered = true;
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  if (!answered) st.malformed = "no RTM_GETDCB reply with sequence " + std::to_string(seq);
  return st;
}

std::vector<uint8_t> build_dcb_reply(uint8_t cmd, const std::string& ifname, uint32_t seq,
                                     const DcbState& s) {
  Writer w(RTM_GETDCB, 0, seq);
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = cmd;
  w.put(&d, sizeof d);
  w.attr(DCB_ATTR_IFNAME, ifname.c_str(), ifname.size() + 1);
  if (cmd == DCB_CMD_IEEE_GET) {
    size_t ieee = w.nest_start(DCB_ATTR_IEEE);
    if (!s.prio_tc.empty()) {
      ieee_ets ets{};
      for (size_t i = 0; i < IEEE_8021QAZ_MAX_TCS; ++i) {
        ets.prio_tc[i] = static_cast<uint8_t>(i < s.prio_tc.size() ? s.prio_tc[i] : 0);
        ets.tc_tx_bw[i] = static_cast<uint8_t>(i < s.tc_tx_bw.size() ? s.tc_tx_bw[i] : 0);
        ets.tc_tsa[i] = static_cast<uint8_t>(i < s.tc_tsa.size() ? s.tc_tsa[i] : 0);
      }
      w.attr(DCB_ATTR_IEEE_ETS, &ets, sizeof ets);
    }
    if (s.pfc_source == "ieee" && s.pfc_enabled) {
      ieee_pfc pfc{};
      pfc.pfc_cap = static_cast<uint8_t>(s.pfc_cap.value_or(8));
      pfc.pfc_en = static_cast<uint8_t>(*s.pfc_enabled);
      pfc.delay = static_cast<uint16_t>(s.pfc_delay.value_or(0));
      for (size_t i = 0; i < IEEE_8021QAZ_MAX_TCS; ++i) {
        pfc.requests[i] = i < s.pfc_requests.size() ? s.pfc_requests[i] : 0;
        pfc.indications[i] = i < s.pfc_indications.size() ? s.pfc_indications[i] : 0;
      }
      w.attr(DCB_ATTR_IEEE_PFC, &pfc, sizeof pfc);
    }
    size_t table = w.nest_start(DCB_ATTR_IEEE_APP_TABLE);
    for (const auto& a : s.apps) {
      dcb_app app{};
      app.selector = static_cast<uint8_t>(a.selector);
      app.priority = static_cast<uint8_t>(a.priority);
      app.protocol = static_cast<uint16_t>(a.protocol);
      w.attr(DCB_ATTR_IEEE_APP, &app, sizeof app);
    }
    w.nest_end(table);
    w.nest_end(ieee);
    if (s.dcbx) w.attr_u8(DCB_ATTR_DCBX, static_cast<uint8_t>(*s.dcbx));
  } else if (cmd == DCB_CMD_PFC_GCFG) {
    size_t nest = w.nest_start(DCB_ATTR_PFC_CFG);
    for (int p = 0; p < 8; ++p)
      w.attr_u8(static_cast<uint16_t>(DCB_PFC_UP_ATTR_0 + p),
                static_cast<uint8_t>(s.pfc_enabled && (*s.pfc_enabled >> p) & 1));
    w.nest_end(nest);
  } else if (cmd == DCB_CMD_GDCBX) {
    w.attr_u8(DCB_ATTR_DCBX, static_cast<uint8_t>(s.dcbx.value_or(0)));
  }
  return w.done();
}

std::vector<uint8_t> build_netlink_error(int err, uint32_t seq) {
  Writer w(NLMSG_ERROR, 0, seq);
  nlmsgerr e{};
  e.error = -err;
  e.msg.nlmsg_seq = seq;
  e.msg.nlmsg_type = RTM_GETDCB;
  w.put(&e, sizeof e);
  return w.done();
}

bool parse_dcb_request(const std::vector<uint8_t>& bytes, uint8_t& cmd, std::string& ifname,
                       uint32_t& seq) {
  if (bytes.size() < NLMSG_HDRLEN + sizeof(dcbmsg)) return false;
  nlmsghdr h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const size_t at = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg));
  // A length shorter than the headers would make the attribute span below wrap around.
  if (h.nlmsg_type != RTM_GETDCB || h.nlmsg_len > bytes.size() || h.nlmsg_len < at) return false;
  seq = h.nlmsg_seq;
  dcbmsg d;
  std::memcpy(&d, bytes.data() + NLMSG_HDRLEN, sizeof d);
  cmd = d.cmd;
  bool found = false;
  for_each_attr(bytes.data() + at, h.nlmsg_len - at,
                [&](uint16_t type, const uint8_t* q, size_t len) {
                  if (type == DCB_ATTR_IFNAME && len > 0) {
                    ifname.assign(reinterpret_cast<const char*>(q),
                                  strnlen(reinterpret_cast<const char*>(q), len));
                    found = true;
                  }
                });
  return found;
}

}  // namespace fabkit::probes
