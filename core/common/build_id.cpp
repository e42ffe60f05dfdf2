#include "common/build_id.h"

#include <elf.h>
#include <link.h>

#include <cstdio>
#include <string_view>

namespace tb::common {

namespace {

// The executable is the first object dl_iterate_phdr visits.
int readBuildId(dl_phdr_info* info, size_t, void* out)
{
    std::string& id = *static_cast<std::string*>(out);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = info->dlpi_phdr[i];
        if (header.p_type != PT_NOTE)
            continue;
        const char* at = reinterpret_cast<const char*>(info->dlpi_addr + header.p_vaddr);
        const char* end = at + header.p_memsz;
        while (at + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
            const char* name = at + sizeof(ElfW(Nhdr));
            const char* desc = name + ((note->n_namesz + 3) & ~3u);
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4
                && std::string_view(name, 3) == "GNU") {
                char hex[3];
                for (unsigned j = 0; j < note->n_descsz; ++j) {
                    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(desc[j]));
                    id += hex;
                }
                return 1;
            }
            at = desc + ((note->n_descsz + 3) & ~3u);
        }
    }
    return 1; // only the executable
}

} // namespace

std::string executableBuildId()
{
    std::string id;
    dl_iterate_phdr(readBuildId, &id);
    return id;
}

} // namespace tb::common
