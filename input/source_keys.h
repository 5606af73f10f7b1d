// Internal to input/: the [data] keys several sources declare alike (each declares the one
// key, so the config shows it once, with all of them), named relative to [data].
#pragma once

#include "input/data_source.h"

namespace troupe::input {

// "files": a glob of the training files (text, tfrecord).
DataKey FilesKey();
// "num_classes": labels are in [0, num_classes) (tfrecord, synthetic).
DataKey NumClassesKey();
// "features.image.shape": one example's input shape (tfrecord, synthetic).
DataKey ImageShapeKey();

// "num_classes: the <source> source needs it: ..." when it is unset (0).
Status NeedNumClasses(const DataSourceSpec& spec);

}  // namespace troupe::input
