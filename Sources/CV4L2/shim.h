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

// Configuration: setting controls, the configuration lock, events and the
// media controller. The request numbers are _IOW/_IOWR macros and the control
// IDs are sums over class-base macros; Swift imports neither, so each one
// used is re-exported here under its own name behind a `cv4l2_` prefix.
#include <linux/media.h>

static const unsigned long cv4l2_VIDIOC_S_EXT_CTRLS = VIDIOC_S_EXT_CTRLS;
static const unsigned long cv4l2_VIDIOC_TRY_EXT_CTRLS = VIDIOC_TRY_EXT_CTRLS;
static const unsigned long cv4l2_VIDIOC_G_PRIORITY = VIDIOC_G_PRIORITY;
static const unsigned long cv4l2_VIDIOC_S_PRIORITY = VIDIOC_S_PRIORITY;
static const unsigned long cv4l2_VIDIOC_SUBSCRIBE_EVENT = VIDIOC_SUBSCRIBE_EVENT;
static const unsigned long cv4l2_VIDIOC_UNSUBSCRIBE_EVENT = VIDIOC_UNSUBSCRIBE_EVENT;
static const unsigned long cv4l2_VIDIOC_DQEVENT = VIDIOC_DQEVENT;
static const unsigned long cv4l2_MEDIA_IOC_DEVICE_INFO = MEDIA_IOC_DEVICE_INFO;
static const unsigned long cv4l2_MEDIA_IOC_G_TOPOLOGY = MEDIA_IOC_G_TOPOLOGY;

// User-class controls behind the camera features (white balance).
static const unsigned int cv4l2_CID_AUTO_WHITE_BALANCE = V4L2_CID_AUTO_WHITE_BALANCE;
static const unsigned int cv4l2_CID_DO_WHITE_BALANCE = V4L2_CID_DO_WHITE_BALANCE;
static const unsigned int cv4l2_CID_WHITE_BALANCE_TEMPERATURE = V4L2_CID_WHITE_BALANCE_TEMPERATURE;
static const unsigned int cv4l2_CID_RED_BALANCE = V4L2_CID_RED_BALANCE;
static const unsigned int cv4l2_CID_BLUE_BALANCE = V4L2_CID_BLUE_BALANCE;
static const unsigned int cv4l2_CID_EXPOSURE = V4L2_CID_EXPOSURE;
static const unsigned int cv4l2_CID_AUTOGAIN = V4L2_CID_AUTOGAIN;
static const unsigned int cv4l2_CID_GAIN = V4L2_CID_GAIN;
static const unsigned int cv4l2_CID_HUE = V4L2_CID_HUE;
static const unsigned int cv4l2_CID_HUE_AUTO = V4L2_CID_HUE_AUTO;
// Camera-class controls: focus, exposure, white-balance presets, zoom.
static const unsigned int cv4l2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO;
static const unsigned int cv4l2_CID_EXPOSURE_ABSOLUTE = V4L2_CID_EXPOSURE_ABSOLUTE;
static const unsigned int cv4l2_CID_EXPOSURE_AUTO_PRIORITY = V4L2_CID_EXPOSURE_AUTO_PRIORITY;
static const unsigned int cv4l2_CID_FOCUS_ABSOLUTE = V4L2_CID_FOCUS_ABSOLUTE;
static const unsigned int cv4l2_CID_FOCUS_RELATIVE = V4L2_CID_FOCUS_RELATIVE;
static const unsigned int cv4l2_CID_FOCUS_AUTO = V4L2_CID_FOCUS_AUTO;
static const unsigned int cv4l2_CID_ZOOM_ABSOLUTE = V4L2_CID_ZOOM_ABSOLUTE;
static const unsigned int cv4l2_CID_AUTO_EXPOSURE_BIAS = V4L2_CID_AUTO_EXPOSURE_BIAS;
static const unsigned int cv4l2_CID_AUTO_N_PRESET_WHITE_BALANCE = V4L2_CID_AUTO_N_PRESET_WHITE_BALANCE;
static const unsigned int cv4l2_CID_3A_LOCK = V4L2_CID_3A_LOCK;
static const unsigned int cv4l2_CID_AUTO_FOCUS_START = V4L2_CID_AUTO_FOCUS_START;
static const unsigned int cv4l2_CID_AUTO_FOCUS_STOP = V4L2_CID_AUTO_FOCUS_STOP;
static const unsigned int cv4l2_CID_AUTO_FOCUS_STATUS = V4L2_CID_AUTO_FOCUS_STATUS;
static const unsigned int cv4l2_CID_AUTO_FOCUS_RANGE = V4L2_CID_AUTO_FOCUS_RANGE;
// Flash-class controls beyond the three used by discovery.
static const unsigned int cv4l2_CID_FLASH_STROBE_SOURCE = V4L2_CID_FLASH_STROBE_SOURCE;
static const unsigned int cv4l2_CID_FLASH_STROBE_STOP = V4L2_CID_FLASH_STROBE_STOP;
static const unsigned int cv4l2_CID_FLASH_STROBE_STATUS = V4L2_CID_FLASH_STROBE_STATUS;
static const unsigned int cv4l2_CID_FLASH_INTENSITY = V4L2_CID_FLASH_INTENSITY;
static const unsigned int cv4l2_CID_FLASH_FAULT = V4L2_CID_FLASH_FAULT;
static const unsigned int cv4l2_CID_FLASH_READY = V4L2_CID_FLASH_READY;
// Media entity function and interface type of a flash sub-device.
static const unsigned int cv4l2_MEDIA_ENT_F_FLASH = MEDIA_ENT_F_FLASH;
static const unsigned int cv4l2_MEDIA_INTF_T_V4L_SUBDEV = MEDIA_INTF_T_V4L_SUBDEV;


// Streaming capture (S_FMT, S_PARM, buffer queue). The request numbers are
// _IOW/_IOWR macros, which Swift cannot import.
static const unsigned long cv4l2_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long cv4l2_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long cv4l2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long cv4l2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long cv4l2_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long cv4l2_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long cv4l2_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long cv4l2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;

#endif
