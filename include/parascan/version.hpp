// The library's version. CMakeLists.txt reads its project version from these three lines, so the two
// cannot drift apart; PARASCAN_VERSION compares as one number (major * 10000 + minor * 100 + patch).
#pragma once

#define PARASCAN_VERSION_MAJOR 0
#define PARASCAN_VERSION_MINOR 2
#define PARASCAN_VERSION_PATCH 0
#define PARASCAN_VERSION (PARASCAN_VERSION_MAJOR * 10000 + PARASCAN_VERSION_MINOR * 100 + PARASCAN_VERSION_PATCH)
