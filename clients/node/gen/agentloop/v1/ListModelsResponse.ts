// Original file: protos/agentloop/v1/reasoner.proto

import type { ModelInfo as _agentloop_v1_ModelInfo, ModelInfo__Output as _agentloop_v1_ModelInfo__Output } from '../../agentloop/v1/ModelInfo';

/**
 * Response of Reasoner.ListModels.
 */
export interface ListModelsResponse {
  /**
   * Every model served by name, sorted by name.
   */
  'models'?: (_agentloop_v1_ModelInfo)[];
  /**
   * The model of a step that names none.
   */
  'default_model'?: (string);
  /**
   * True when the Reasoner has no models file: any name is sent to its one
   * endpoint as the model id, so no name is unknown.
   */
  'any_name'?: (boolean);
}

/**
 * Response of Reasoner.ListModels.
 */
export interface ListModelsResponse__Output {
  /**
   * Every model served by name, sorted by name.
   */
  'models': (_agentloop_v1_ModelInfo__Output)[];
  /**
   * The model of a step that names none.
   */
  'default_model': (string);
  /**
   * True when the Reasoner has no models file: any name is sent to its one
   * endpoint as the model id, so no name is unknown.
   */
  'any_name': (boolean);
}
