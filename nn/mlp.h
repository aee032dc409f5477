#ifndef ACTORFLOW_NN_MLP_H_
#define ACTORFLOW_NN_MLP_H_

// A perceptron (inputs -> hidden ReLU layers -> classes, softmax
// cross-entropy, SGD with momentum) as a plan, and the sequential loop that
// computes the same thing without actors. docs/training.md describes
// the plan; examples/mnist_mlp runs it on Fashion-MNIST.
//
// The layers are split over `streams` CPU (or GPU) streams by their units,
// not by the batch's rows: every stream sees the whole batch and holds a
// slice of every large weight matrix, alternately its output units
// ("column" layers) and its input units ("row" layers, whose per-stream
// partial products are summed in stream order on every stream). So no
// gradient and no weight ever crosses between streams: the only traffic is
// the row layers' partial products, a few kilobytes per piece.
//
// One header for all of it: the configuration (mlp_config.h), the plan
// (mlp_plan.h), its driver (mlp_trainer.h) and the sequential loop
// (reference_trainer.h).
#include "nn/mlp_config.h"
#include "nn/mlp_plan.h"
#include "nn/mlp_trainer.h"
#include "nn/reference_trainer.h"

#endif  // ACTORFLOW_NN_MLP_H_
