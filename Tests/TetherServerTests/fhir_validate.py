"""Validates a FHIR R4 transaction Bundle (a file, or standard input) with PyPI's fhir.resources (pinned by
scripts/setup/fhir-venv.sh): its R4B models parse the bundle, each entry's resource is parsed again with the model
of its type (Observation, Device), and any validation error fails with status 1. fhir.resources checks structure and
datatypes but not the required value-set bindings, so those that matter here are checked against the code lists of
the FHIR R4 specification, as are the bundle's internal references and the conditional creates.

On success prints one JSON object: {"observations": [...], "devices": [...]} with what a receiver would read (values
as the exact decimal text Python parsed), for the calling test to compare with what it stored.

JSON numbers are read as decimal.Decimal (json.loads parse_float): model_validate_json would read them through a
binary float and round a long mantissa, which is the very error the test is looking for.
"""
import decimal
import json
import sys
import urllib.parse

from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.device import Device
from fhir.resources.R4B.observation import Observation

# FHIR R4 ValueSets with required bindings (hl7.org/fhir/R4/valueset-observation-status.html,
# valueset-bundle-type.html, valueset-http-verb.html) and the data-absent-reason CodeSystem
# (hl7.org/fhir/R4/codesystem-data-absent-reason.html).
OBSERVATION_STATUS = {"registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"}
DATA_ABSENT_REASON = {
    "unknown", "asked-unknown", "temp-unknown", "not-asked", "asked-declined", "masked", "not-applicable", "unsupported",
    "as-text", "error", "not-a-number", "negative-infinity", "positive-infinity", "not-performed", "not-permitted",
}
DATA_ABSENT_SYSTEM = "http://terminology.hl7.org/CodeSystem/data-absent-reason"
GATEWAY_EXTENSION = "http://hl7.org/fhir/StructureDefinition/observation-gatewayDevice"
MODELS = {"Observation": Observation, "Device": Device}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    document = json.loads(text, parse_float=decimal.Decimal)
    try:
        bundle = Bundle.model_validate(document)
    except Exception as error:  # pydantic.ValidationError and fhir_core's errors alike
        fail(f"Bundle does not validate: {error}")
    if bundle.type != "transaction":
        fail(f"Bundle.type is {bundle.type!r}, not 'transaction'")
    entries = bundle.entry or []
    full_urls = [entry.fullUrl for entry in entries]
    if len(set(full_urls)) != len(full_urls):
        fail("fullUrl repeats")
    by_url = {}
    for index, (entry, raw) in enumerate(zip(entries, document["entry"])):
        resource_type = raw["resource"].get("resourceType")
        model = MODELS.get(resource_type)
        if model is None:
            fail(f"entry {index}: unexpected resource type {resource_type!r}")
        try:
            resource = model.model_validate(raw["resource"])
        except Exception as error:
            fail(f"entry {index} ({resource_type}) does not validate: {error}")
        if not entry.fullUrl or not entry.fullUrl.startswith("urn:uuid:"):
            fail(f"entry {index}: fullUrl {entry.fullUrl!r} is not a urn:uuid")
        request = entry.request
        if request is None or request.method != "POST" or request.url != resource_type:
            fail(f"entry {index}: request is not POST {resource_type}")
        identifiers = resource.identifier or []
        if len(identifiers) != 1:
            fail(f"entry {index}: {len(identifiers)} identifiers, expected one")
        wanted = {"identifier": [f"{identifiers[0].system}|{identifiers[0].value}"]}
        try:
            condition = urllib.parse.parse_qs(request.ifNoneExist or "", strict_parsing=True)
        except ValueError as error:
            fail(f"entry {index}: ifNoneExist {request.ifNoneExist!r} is not a search query: {error}")
        if condition != wanted:
            fail(f"entry {index}: ifNoneExist {request.ifNoneExist!r} is not the conditional create on {wanted}")
        # pydantic would take a decimal written as a JSON string ("120.5"); R4 §2.6.2 wants a JSON number.
        quantity = raw["resource"].get("valueQuantity")
        if quantity is not None and (isinstance(quantity.get("value"), bool) or not isinstance(quantity.get("value"), (int, decimal.Decimal))):
            fail(f"entry {index}: valueQuantity.value {quantity.get('value')!r} is not a JSON number")
        by_url[entry.fullUrl] = (resource_type, resource)

    observations, devices = [], []
    for url, (resource_type, resource) in by_url.items():
        if resource_type == "Device":
            devices.append({
                "full_url": url, "identifier": f"{resource.identifier[0].system}|{resource.identifier[0].value}",
                "manufacturer": resource.manufacturer, "model": resource.modelNumber, "serial": resource.serialNumber,
            })
            continue
        if resource.status not in OBSERVATION_STATUS:
            fail(f"{url}: status {resource.status!r} is not in the R4 ObservationStatus value set")
        if (resource.valueQuantity is None) == (resource.dataAbsentReason is None):
            fail(f"{url}: exactly one of valueQuantity and dataAbsentReason is expected (obs-6)")
        absent = None
        if resource.dataAbsentReason is not None:
            coding = resource.dataAbsentReason.coding[0]
            if coding.system != DATA_ABSENT_SYSTEM or coding.code not in DATA_ABSENT_REASON:
                fail(f"{url}: dataAbsentReason {coding.system}|{coding.code} is not an R4 data-absent-reason code")
            absent = coding.code
        value = unit = None
        if resource.valueQuantity is not None:
            quantity = resource.valueQuantity
            if quantity.system != "http://unitsofmeasure.org" or not quantity.code or quantity.code != quantity.unit:
                fail(f"{url}: valueQuantity is not a UCUM quantity: {quantity}")
            value, unit = str(quantity.value), quantity.code
        def resolved(reference, what):
            target = by_url.get(reference.reference)
            if target is None or target[0] != "Device":
                fail(f"{url}: {what} {reference.reference!r} names no Device entry of the bundle")
            return f"{target[1].identifier[0].system}|{target[1].identifier[0].value}"
        gateways = [e for e in (resource.extension or []) if e.url == GATEWAY_EXTENSION]
        if len(gateways) != 1:
            fail(f"{url}: {len(gateways)} gatewayDevice extensions, expected one")
        observations.append({
            "full_url": url,
            "identifier": f"{resource.identifier[0].system}|{resource.identifier[0].value}",
            "status": resource.status,
            "category": [c.code for concept in (resource.category or []) for c in concept.coding],
            "codes": [f"{c.system}|{c.code}" for c in resource.code.coding],
            "effective": resource.effectiveDateTime.isoformat() if resource.effectiveDateTime else None,
            "value": value, "unit": unit, "absent": absent,
            "device": resolved(resource.device, "device"),
            "gateway": resolved(gateways[0].valueReference, "gatewayDevice"),
        })
    print(json.dumps({"observations": observations, "devices": devices}))


main()
