//! [`Device`]: where a tensor's data lives (DLPack's `DLDevice`).
use std::fmt;

use crate::enums::DeviceType;
use crate::sys;

/// A device: DLPack's device type number and ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// One of [`DeviceType`]'s numbers.
    pub device_type: i32,
    /// The ordinal; 0 for the host.
    pub device_id: i32,
}

impl Device {
    /// Host memory.
    pub const CPU: Device = Device { device_type: DeviceType::Cpu as i32, device_id: 0 };

    /// CUDA device `id`.
    pub fn cuda(id: i32) -> Device {
        Device { device_type: DeviceType::Cuda as i32, device_id: id }
    }

    /// The device type, if attn_c.h defines its number.
    pub fn kind(&self) -> Option<DeviceType> {
        DeviceType::from_raw(self.device_type)
    }

    /// Whether the host may read the data (CPU or pinned CUDA host memory).
    pub fn is_host(&self) -> bool {
        matches!(self.kind(), Some(DeviceType::Cpu | DeviceType::CudaHost))
    }

    pub(crate) fn to_raw(self) -> sys::attn_device_t {
        sys::attn_device_t { device_type: self.device_type, device_id: self.device_id }
    }

    pub(crate) fn from_raw(d: sys::attn_device_t) -> Device {
        Device { device_type: d.device_type, device_id: d.device_id }
    }
}

impl Default for Device {
    fn default() -> Device {
        Device::CPU
    }
}

impl fmt::Display for Device {
    /// As libattn's messages spell it: "cpu", "cuda:0".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Some(DeviceType::Cpu) => f.write_str("cpu"),
            Some(DeviceType::Cuda) => write!(f, "cuda:{}", self.device_id),
            Some(DeviceType::CudaHost) => write!(f, "cuda_host:{}", self.device_id),
            Some(DeviceType::CudaManaged) => write!(f, "cuda_managed:{}", self.device_id),
            None => write!(f, "device_type_{}:{}", self.device_type, self.device_id),
        }
    }
}
