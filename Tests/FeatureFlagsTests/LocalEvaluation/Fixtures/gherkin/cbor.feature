@fractional @fractional-cbor
Feature: Fractional bucketing by deterministic CBOR (flagd's accepted ADR)

  # Expectations computed by the reference evaluator openfeature-flagd-core 2.0.0 over flags.json.

  Background:
    Given an evaluator

  Scenario Outline: Bucketing values of every type
    Given a String-flag with key "cbor-by-unit" and a fallback value "wrong"
    And a context containing a targeting key with value "t"
    And a context containing a key "unit", with type "<type>" and with value "<unit>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"
    And the reason should be "TARGETING_MATCH"

    Examples:
      | unit             | type    | value |
      | user-1           | String  | b     |
      | é-42             | String  | d     |
      |                  | String  | a     |
      | 42               | Integer | b     |
      | -7               | Integer | a     |
      | 9007199254740991 | Integer | a     |
      | 2.5              | Float   | b     |
      | 1.0              | Float   | d     |
      | -0.5             | Float   | b     |
      | true             | Boolean | a     |
      | false            | Boolean | a     |

  Scenario Outline: The shorthand hashes [flagKey, targetingKey]
    Given a String-flag with key "cbor-shorthand" and a fallback value "wrong"
    And a context containing a targeting key with value "<key>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | key    | value |
      | user-1 | tails |
      | user-2 | heads |
      | user-3 | tails |
      | a      | heads |
      | 42     | tails |

  Scenario: A missing bucketing value is an error: the default variant
    Given a String-flag with key "cbor-by-unit" and a fallback value "wrong"
    And a context containing a targeting key with value "t"
    When the flag was evaluated with details
    Then the resolved details value should be "fallback"
    And the reason should be "DEFAULT"

  Scenario: The shorthand without a targeting key is an error, even with one bucket
    Given a String-flag with key "cbor-single-bucket" and a fallback value "wrong"
    When the flag was evaluated with details
    Then the resolved details value should be "fallback"
    And the reason should be "DEFAULT"

  Scenario: The shorthand with an empty targeting key is an error
    Given a String-flag with key "cbor-shorthand" and a fallback value "wrong"
    And a context containing a targeting key with value ""
    When the flag was evaluated with details
    Then the resolved details value should be "fallback"
    And the reason should be "DEFAULT"
