#ifndef CAPCTL_CALSA_SHIM_H
#define CAPCTL_CALSA_SHIM_H

// ALSA for Swift: the library's headers import as they are; this shim only
// gathers them into one module.
#include <alsa/asoundlib.h>

#endif
