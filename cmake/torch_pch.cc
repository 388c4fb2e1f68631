// The one file of fabkit_torch_pch (cmake/torch_pch.cmake): its build makes the precompiled
// <torch/torch.h> that the LibTorch targets reuse. It defines nothing.
