#!/bin/bash

__tether_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__tether_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__tether_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__tether_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_tether() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(-h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    status|devices|scan|pair|forget|settings|outbox|dead-letters|conflicts|sync|replay|health|firmware|help)
        # Offer subcommand argument completions
        "_tether_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'status devices scan pair forget settings outbox dead-letters conflicts sync replay health firmware help' -- "${cur}"))
        ;;
    esac
}

_tether_status() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_devices() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_scan() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --duration)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--duration')
        return
        ;;
    esac
}

_tether_pair() {
    repeating_flags=()
    non_repeating_flags=(--yes --json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --passkey --timeout)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--passkey')
        return
        ;;
    '--timeout')
        return
        ;;
    esac
}

_tether_forget() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_settings() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    get|set)
        # Offer subcommand argument completions
        "_tether_settings_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'get set' -- "${cur}"))
        ;;
    esac
}

_tether_settings_get() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_settings_set() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_outbox() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list)
        # Offer subcommand argument completions
        "_tether_outbox_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list' -- "${cur}"))
        ;;
    esac
}

_tether_outbox_list() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --status --limit)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--status')
        return
        ;;
    '--limit')
        return
        ;;
    esac
}

_tether_dead-letters() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|retry|discard)
        # Offer subcommand argument completions
        "_tether_dead-letters_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list retry discard' -- "${cur}"))
        ;;
    esac
}

_tether_dead-letters_list() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --limit)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--limit')
        return
        ;;
    esac
}

_tether_dead-letters_retry() {
    repeating_flags=()
    non_repeating_flags=(--all -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_dead-letters_discard() {
    repeating_flags=()
    non_repeating_flags=(--all -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_conflicts() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|resolve)
        # Offer subcommand argument completions
        "_tether_conflicts_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list resolve' -- "${cur}"))
        ;;
    esac
}

_tether_conflicts_list() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_conflicts_resolve() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=(--bus --keep)
    __tether_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--keep')
        __tether_add_completions -W 'mine'$'\n''theirs'
        return
        ;;
    esac
}

_tether_sync() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_replay() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--db --expect)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--db')
        return
        ;;
    '--expect')
        return
        ;;
    esac
}

_tether_health() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    devices|samples|delete|correct|deletions|projections|watch|backfill|decode)
        # Offer subcommand argument completions
        "_tether_health_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'devices samples delete correct deletions projections watch backfill decode' -- "${cur}"))
        ;;
    esac
}

_tether_health_devices() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_health_samples() {
    repeating_flags=()
    non_repeating_flags=(--include-deleted --json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --metric --since --until --limit)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--metric')
        return
        ;;
    '--since')
        return
        ;;
    '--until')
        return
        ;;
    '--limit')
        return
        ;;
    esac
}

_tether_health_delete() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --note)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--note')
        return
        ;;
    esac
}

_tether_health_correct() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --value --user --note)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--value')
        return
        ;;
    '--user')
        return
        ;;
    '--note')
        return
        ;;
    esac
}

_tether_health_deletions() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --limit)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--limit')
        return
        ;;
    esac
}

_tether_health_projections() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --device)
    __tether_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--device')
        return
        ;;
    esac
}

_tether_health_watch() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_health_backfill() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    esac
}

_tether_health_decode() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--characteristic)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--characteristic')
        return
        ;;
    esac
}

_tether_firmware() {
    repeating_flags=()
    non_repeating_flags=(-h --help)
    repeating_options=()
    non_repeating_options=()
    __tether_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    inspect|update|updates|list|echo|test|confirm|reset|erase)
        # Offer subcommand argument completions
        "_tether_firmware_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'inspect update updates list echo test confirm reset erase' -- "${cur}"))
        ;;
    esac
}

_tether_firmware_inspect() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--keys)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--keys')
        return
        ;;
    esac
}

_tether_firmware_update() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 --leave-in-test --json -h --help)
    repeating_options=(--udp)
    non_repeating_options=(--bus --keys --prove-for --max-failures)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--udp')
        return
        ;;
    '--keys')
        return
        ;;
    '--prove-for')
        return
        ;;
    '--max-failures')
        return
        ;;
    esac
}

_tether_firmware_updates() {
    repeating_flags=()
    non_repeating_flags=(--json -h --help)
    repeating_options=()
    non_repeating_options=(--bus --limit)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--bus')
        return
        ;;
    '--limit')
        return
        ;;
    esac
}

_tether_firmware_list() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 --json -h --help)
    repeating_options=()
    non_repeating_options=(--udp --bus)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--udp')
        return
        ;;
    '--bus')
        return
        ;;
    esac
}

_tether_firmware_echo() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 -h --help)
    repeating_options=()
    non_repeating_options=(--udp)
    __tether_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--udp')
        return
        ;;
    esac
}

_tether_firmware_test() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 -h --help)
    repeating_options=()
    non_repeating_options=(--udp --bus)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--udp')
        return
        ;;
    '--bus')
        return
        ;;
    esac
}

_tether_firmware_confirm() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 -h --help)
    repeating_options=()
    non_repeating_options=(--udp --bus)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--udp')
        return
        ;;
    '--bus')
        return
        ;;
    esac
}

_tether_firmware_reset() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 -h --help)
    repeating_options=()
    non_repeating_options=(--udp --bus)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--udp')
        return
        ;;
    '--bus')
        return
        ;;
    esac
}

_tether_firmware_erase() {
    repeating_flags=()
    non_repeating_flags=(--smp-v1 -h --help)
    repeating_options=()
    non_repeating_options=(--udp --bus)
    __tether_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--udp')
        return
        ;;
    '--bus')
        return
        ;;
    esac
}

_tether_help() {
    :
}

complete -o filenames -F _tether tether
