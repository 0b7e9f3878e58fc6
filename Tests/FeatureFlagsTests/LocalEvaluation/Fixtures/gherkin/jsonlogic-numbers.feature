@jsonlogic
Feature: Numbers and mismatched types in JsonLogic, as flagd's evaluator treats them

  # flagd evaluates with github.com/diegoholiveira/jsonlogic (v3): every JSON number is one
  # float type; some mismatches fail the evaluation, which flagd answers with PARSE_ERROR.

  Background:
    Given an evaluator

  Scenario Outline: in matches numbers by value and list elements as ranges
    Given a String-flag with key "numbers-in" and a fallback value "fallback"
    And a context containing a key "n", with type "<type>" and with value "<n>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | n    | type    | value |
      | 1    | Integer | in    |
      | 1.0  | Float   | in    |
      | 15   | Integer | in    |
      | 20   | Integer | in    |
      | 21   | Integer | out   |
      | 3.5  | Float   | in    |
      | 1    | String  | in    |
      | x    | String  | out   |

  Scenario Outline: == compares numbers by value
    Given a String-flag with key "numbers-equal" and a fallback value "fallback"
    And a context containing a key "n", with type "<type>" and with value "<n>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | n    | type    | value     |
      | 1    | Integer | same      |
      | 1.0  | Float   | same      |
      | 1    | String  | same      |
      | true | Boolean | same      |
      | 2    | Integer | different |

  Scenario Outline: <= is less or equal, so null is not at most 0
    Given a String-flag with key "numbers-at-most" and a fallback value "fallback"
    And a context containing a key "n", with type "<type>" and with value "<n>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | n   | type    | value |
      | 0   | Integer | yes   |
      | -1  | Float   | yes   |
      | 1   | Integer | no    |

  Scenario: A missing value is null, which is not at most 0
    Given a String-flag with key "numbers-at-most" and a fallback value "fallback"
    When the flag was evaluated with details
    Then the resolved details value should be "no"

  Scenario Outline: cat prints numbers without an exponent
    Given a String-flag with key "numbers-cat" and a fallback value "fallback"
    And a context containing a key "n", with type "<type>" and with value "<n>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | n     | type    | value |
      | 1.5   | Float   | a-1.5 |
      | 1e21  | Float   | big   |

  Scenario: cat of a Boolean fails the evaluation
    Given a String-flag with key "numbers-cat" and a fallback value "fallback"
    And a context containing a key "n", with type "Boolean" and with value "true"
    When the flag was evaluated with details
    Then the resolved details value should be "fallback"
    And the reason should be "ERROR"
    And the error-code should be "PARSE_ERROR"

  Scenario Outline: a number looked for among Booleans fails the evaluation; other needles do not
    Given a String-flag with key "numbers-in-booleans" and a fallback value "fallback"
    And a context containing a key "n", with type "<type>" and with value "<n>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"
    And the reason should be "<reason>"

    Examples:
      | n    | type    | value    | reason          |
      | 1    | Integer | fallback | ERROR           |
      | true | Boolean | in       | TARGETING_MATCH |
      | x    | String  | out      | TARGETING_MATCH |
