// Precompiled header for the torch-facing engine sources (keeps 2-core builds bearable).
#pragma once
#include <torch/torch.h>
