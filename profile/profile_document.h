// A profile (cluster.json; docs/profile.md) as its JSON document. The reader is
// profile/profile_reader.h; this is the one writer.
#pragma once

#include <string>

#include "common/json.h"
#include "profile/profile_model.h"

namespace fabkit::profile {

// The document, schema_version first, provenance.content_hash included as it stands in p.
Json to_json(const profile::Profile& p);
// to_json with provenance.content_hash recomputed: what `fabcheck profile` writes.
std::string serialize_profile(profile::Profile p);

}  // namespace fabkit::profile
