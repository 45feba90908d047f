//! warden's policy engine (in progress).
