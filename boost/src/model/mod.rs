//! A trained model: trees with their output group, the base score and the objective; prediction;
//! XGBoost's JSON model format.
