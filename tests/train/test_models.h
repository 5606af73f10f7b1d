// Models the training-loop tests register (models::RegisterModel) next to the zoo's:
// "lenet_dropout_test", LeNet-5 with Dropout(0.5) after its first dense layer, whose masks
// depend on each replica's key from the coordinator; "lenet_double_loss_test", LeNet-5 whose
// Loss is twice the default.
#pragma once

namespace troupe::train::testing {

// Registers the test models once (later calls do nothing).
void RegisterTestModels();

}  // namespace troupe::train::testing
