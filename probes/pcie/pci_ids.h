// Device names from the PCI ID Repository's pci.ids (https://pci-ids.ucw.cz), the file lspci
// reads: "10de  NVIDIA Corporation" then "\t2330  GH100[H100 SXM5 80GB]". Read through the
// injectable root so a --sysroot capture names devices with its own copy and a test's output does
// not depend on the pci.ids version installed here. Written by hand: libpci (pciutils) does this
// but its headers are not installed on the build machines and it reads the host's file only
// (pci_lookup_name ignores an alternative root); the lookup is two substring searches.
#pragma once

#include <filesystem>
#include <string>

namespace fabkit::probes {

class PciIdNames {
 public:
  // The first readable of <root>/usr/share/misc/pci.ids (Debian, Ubuntu),
  // <root>/usr/share/hwdata/pci.ids (Fedora, RHEL) and <root>/usr/share/pci.ids. None: every
  // name() is "".
  static PciIdNames load(const std::filesystem::path& root);
  // Parses this text as pci.ids (tests).
  static PciIdNames from_text(std::string text, std::string source);

  // "NVIDIA Corporation GH100[H100 SXM5 80GB]"; the vendor alone when the device is not listed;
  // "" when the vendor is not. Ids as sysfs writes them ("0x10de") or bare ("10de").
  std::string name(const std::string& vendor_id, const std::string& device_id) const;
  const std::string& source() const { return source_; }

 private:
  std::string text_;
  std::string source_;
};

}  // namespace fabkit::probes
