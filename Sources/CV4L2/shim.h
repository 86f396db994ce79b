#ifndef CAPCTL_CV4L2_SHIM_H
#define CAPCTL_CV4L2_SHIM_H

// V4L2 for Swift. The ioctl request numbers are built by the _IOR/_IOWR
// macros, which Swift cannot import, so each one used is re-exported here as
// a constant with the request's own name behind a `cv4l2_` prefix.
#include <linux/videodev2.h>
#include <libv4l2.h>
#include <sys/ioctl.h>

static const unsigned long cv4l2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long cv4l2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long cv4l2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long cv4l2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long cv4l2_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long cv4l2_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long cv4l2_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
static const unsigned long cv4l2_VIDIOC_QUERY_EXT_CTRL = VIDIOC_QUERY_EXT_CTRL;
static const unsigned long cv4l2_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
static const unsigned long cv4l2_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
static const unsigned long cv4l2_VIDIOC_G_EXT_CTRLS = VIDIOC_G_EXT_CTRLS;

// Control IDs built from class bases by macros that Swift does not evaluate.
static const unsigned int cv4l2_CID_CAMERA_ORIENTATION = V4L2_CID_CAMERA_ORIENTATION;
static const unsigned int cv4l2_CID_FLASH_LED_MODE = V4L2_CID_FLASH_LED_MODE;
static const unsigned int cv4l2_CID_FLASH_STROBE = V4L2_CID_FLASH_STROBE;
static const unsigned int cv4l2_CID_FLASH_TORCH_INTENSITY = V4L2_CID_FLASH_TORCH_INTENSITY;

// ioctl(2) and v4l2_ioctl are variadic, which Swift cannot call; these take
// the one pointer argument every V4L2 request uses.
static inline int cv4l2_ioctl(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}
static inline int cv4l2_libv4l2_ioctl(int fd, unsigned long request, void *arg) {
    return v4l2_ioctl(fd, request, arg);
}
// v4l2_open is variadic as well (the optional mode of open(2)).
static inline int cv4l2_libv4l2_open(const char *path, int flags) {
    return v4l2_open(path, flags);
}

#endif
