// A Keras layer class of the example's own: `ChannelScale`, registered with Keras as
// "custom_model>ChannelScale" (channel_scale.py is its Python twin). It multiplies its input by
// a trainable per-channel scale (one weight, "scale", initialized to ones), so a Keras model
// that uses it (scaled_mlp.json) trains with `custom_model train`, and Keras restores the
// checkpoint once channel_scale.py has registered the class.
#pragma once

#include "core/status.h"

// Registers the layer; call before handing the command line to troupe::launch::Main.
troupe::Status RegisterChannelScale();
