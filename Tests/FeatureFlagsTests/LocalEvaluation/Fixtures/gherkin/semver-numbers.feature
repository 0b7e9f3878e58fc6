@semver
Feature: sem_ver with numbers, prefixes and errors

  # Numbers are versions as flagd's Go evaluator prints them; `v` and `V` prefixes are stripped.

  Background:
    Given an evaluator

  Scenario Outline: Numeric context values and prefixes
    Given a String-flag with key "semver-greater" and a fallback value "fallback"
    And a context containing a key "version", with type "<type>" and with value "<version>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | version | type    | value    |
      | 1.2     | String  | match    |
      | 2       | Integer | match    |
      | 1       | Integer | no-match |
      | 1.2     | Float   | match    |
      | 1.1     | Float   | no-match |
      | v1.1.1  | String  | match    |
      | V2.0.0  | String  | match    |

  Scenario Outline: A number in the rule is a version too
    Given a String-flag with key "semver-caret-number" and a fallback value "wrong"
    And a context containing a key "version", with type "<type>" and with value "<version>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"

    Examples:
      | version | type    | value    |
      | 2.5.0   | String  | match    |
      | 2       | Integer | match    |
      | 3.0.0   | String  | no-match |
      | 1.9     | Float   | no-match |

  Scenario Outline: Anything that is not a version gives the default variant
    Given a String-flag with key "semver-strict" and a fallback value "wrong"
    And a context containing a key "version", with type "<type>" and with value "<version>"
    When the flag was evaluated with details
    Then the resolved details value should be "<value>"
    And the reason should be "<reason>"

    Examples:
      | version  | type    | value    | reason          |
      | 1.2.3    | String  | match    | TARGETING_MATCH |
      | v1.2.3   | String  | match    | TARGETING_MATCH |
      | 1.2.3.4  | String  | fallback | DEFAULT         |
      | 01.2.3   | String  | fallback | DEFAULT         |
      | true     | Boolean | fallback | DEFAULT         |
      | 1.2-beta | String  | fallback | DEFAULT         |

  Scenario: A flag that does not exist
    Given a String-flag with key "no-such-flag" and a fallback value "fallback"
    When the flag was evaluated with details
    Then the resolved details value should be "fallback"
    And the error-code should be "FLAG_NOT_FOUND"

  Scenario: A flag of another type
    Given a String-flag with key "integer-flag" and a fallback value "fallback"
    When the flag was evaluated with details
    Then the resolved details value should be "fallback"
    And the error-code should be "TYPE_MISMATCH"
