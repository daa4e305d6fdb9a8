import TetherPrimitives

/// What each kind measures and how it encodes it: seeded values, the stored-measurement rules and the live streams.
extension HealthDevice {
    /// The special value, if any, that replaces the main value of the measurement being taken.
    mutating func specialForNextMeasurement() -> MedicalFloatSpecial? {
        measurementsTaken += 1
        if let fault = settings.faults.specialValues.first(where: { $0.measurement == measurementsTaken }) {
            return fault.value
        }
        return upcomingSpecials.isEmpty ? nil : upcomingSpecials.removeFirst()
    }

    func sfloat(_ special: MedicalFloatSpecial?, mantissa: Int, exponent: Int) -> SFloat {
        if let special { return SFloat(special) }
        return SFloat(mantissa: mantissa, exponent: exponent) ?? SFloat(.nres)
    }

    /// One measurement: encoded, stored, and queued for a subscribed client where the profile sends it at once.
    mutating func takeMeasurement(at now: Timestamp, live: Bool, user: UInt8? = nil) {
        let special = specialForNextMeasurement()
        let time = clock.dateTime(at: now)
        switch settings.kind {
        case .heartRate:
            return  // a strap streams only (liveTick)
        case .glucose:
            let milligramsPerDecilitre = Int.random(in: 70...250, using: &random)
            let withContext = settings.contextEvery > 0 && measurementsTaken % settings.contextEvery == 0
            let meal = UInt8.random(in: 1...5, using: &random)
            let carbohydrateGrams = Int.random(in: 10...90, using: &random)
            // GLS: concentration in kg/L; 1 mg/dL = 1e-5 kg/L, so mantissa mg/dL with exponent −5.
            let concentration = sfloat(special, mantissa: milligramsPerDecilitre, exponent: -5)
            let failed = upcomingErrorRecords > 0
            if failed { upcomingErrorRecords -= 1 }
            store.append { sequence in
                // A failed test: no concentration, the Sensor Status Annunciation's bit 3 (strip insertion error).
                let measurement = GlucoseMeasurementValue(
                    sequenceNumber: sequence, baseTime: time, timeOffsetMinutes: 0,
                    concentration: failed ? nil : .init(
                        value: concentration, unit: .kilogramsPerLitre,
                        type: 1, sampleLocation: 1),
                    sensorStatusAnnunciation: failed ? 0x0008 : nil,
                    contextFollows: withContext && !failed)
                var transmissions = [HealthTransmission(characteristic: HealthUUID.glucoseMeasurement, value: measurement.bytes, delivery: .notify)]
                if withContext && !failed {
                    var context = GlucoseContextValue(sequenceNumber: sequence)
                    // Carbohydrate ID 1 = breakfast; grams as kg with exponent −3.
                    context.carbohydrate = (1, SFloat(mantissa: carbohydrateGrams, exponent: -3) ?? SFloat(.nres))
                    context.meal = meal
                    transmissions.append(HealthTransmission(characteristic: HealthUUID.glucoseContext, value: context.bytes, delivery: .notify))
                }
                return StoredRecord(sequenceNumber: sequence, key: sequence, transmissions: transmissions)
            }
        case .bloodPressure:
            let systolic = Int.random(in: 100...150, using: &random)
            let diastolic = Int.random(in: 60...95, using: &random)
            let pulse = Int.random(in: 55...95, using: &random)
            let userID = user ?? 1
            if live { intermediateCuffPressures(up: systolic + 20, at: now) }
            // BLS v1.1.1: a failed measurement reports NaN in all three pressure fields.
            let value = BloodPressureMeasurementValue(
                unit: .millimetresOfMercury, systolic: sfloat(special, mantissa: systolic, exponent: 0),
                diastolic: sfloat(special, mantissa: diastolic, exponent: 0),
                meanArterialPressure: sfloat(special, mantissa: diastolic + (systolic - diastolic) / 3, exponent: 0),
                timeStamp: time, pulseRate: SFloat(mantissa: pulse, exponent: 0), userID: userID, measurementStatus: 0)
            storeAndSend(HealthUUID.bloodPressureMeasurement, value.bytes, delivery: .indicate, live: live)
        case .thermometer:
            let tenths = Int.random(in: 360...385, using: &random)
            // HTS v1.0: no Temperature Type field, because the static type is in characteristic 0x2A1D.
            let value = TemperatureMeasurementValue(
                unit: .celsius,
                temperature: special.map(MedicalFloat32.init) ?? MedicalFloat32(mantissa: tenths, exponent: -1) ?? MedicalFloat32(.nres),
                timeStamp: time)
            storeAndSend(HealthUUID.temperatureMeasurement, value.bytes, delivery: .indicate, live: live)
        case .weightScale:
            let userID = user ?? users.first?.index ?? 0xFF
            let baseKilograms = 55 + 15 * Double(userID % 8)
            let grams = Int(baseKilograms * 1000) + Int.random(in: -1500...1500, using: &random)
            // WSS v1.0: 0.005 kg resolution; 0xFFFF "Measurement Unsuccessful" is the scale's NaN.
            let steps = special == nil ? UInt16(clamping: grams / 5) : WeightMeasurementValue.measurementUnsuccessful
            let value = WeightMeasurementValue(units: .si, weightSteps: steps, timeStamp: time, userID: userID)
            let record = store.append { sequence in
                StoredRecord(sequenceNumber: sequence, key: sequence, transmissions: [
                    HealthTransmission(characteristic: HealthUUID.weightMeasurement, value: value.bytes, delivery: .indicate)
                ])
            }
            recordUsers[record.sequenceNumber] = userID
            if live, enabled.contains(HealthUUID.weightMeasurement), userID == 0xFF || userID == consentedUser {
                outbox += record.transmissions
            }
        case .pulseOximeter:
            let saturation = Int.random(in: 93...99, using: &random)
            let pulse = Int.random(in: 55...95, using: &random)
            let value = PLXSpotCheckValue(
                spO2: sfloat(special, mantissa: saturation, exponent: 0), pulseRate: SFloat(mantissa: pulse, exponent: 0) ?? SFloat(.nres),
                timeStamp: time, deviceClockNotSet: !clock.isSet)
            let record = store.append { sequence in
                StoredRecord(sequenceNumber: sequence, key: sequence, transmissions: [
                    HealthTransmission(characteristic: HealthUUID.plxSpotCheckMeasurement, value: value.bytes, delivery: .indicate)
                ])
            }
            if live { outbox += record.transmissions }
        case .cgm:
            let milligramsPerDecilitre = Int.random(in: 80...180, using: &random)
            let minutes = UInt16(clamping: max(0, (now.nanoseconds - sessionStartedAt.nanoseconds) / 60_000_000_000))
            var value = CGMMeasurementValue(
                glucoseMilligramsPerDecilitre: sfloat(special, mantissa: milligramsPerDecilitre, exponent: 0),
                timeOffsetMinutes: minutes)
            value.trend = SFloat(mantissa: Int.random(in: -20...20, using: &random), exponent: -1)
            let bytes = value.bytes(withCRC: settings.e2eCRC)
            let record = store.append { sequence in
                StoredRecord(sequenceNumber: sequence, key: minutes, transmissions: [
                    HealthTransmission(characteristic: HealthUUID.cgmMeasurement, value: bytes, delivery: .notify)
                ])
            }
            if live { outbox += record.transmissions }
        }
    }

    /// Cuff, thermometer: the measurement is stored until a confirmed indication delivered it.
    mutating func storeAndSend(_ characteristic: UInt16, _ bytes: [UInt8], delivery: Delivery, live: Bool) {
        let record = store.append { sequence in
            StoredRecord(sequenceNumber: sequence, key: sequence, transmissions: [
                HealthTransmission(characteristic: characteristic, value: bytes, delivery: delivery)
            ])
        }
        if live, enabled.contains(characteristic) { outbox += record.transmissions }
    }

    /// BLS v1.1.1: Intermediate Cuff Pressure notifications while the cuff inflates, in mmHg.
    mutating func intermediateCuffPressures(up peak: Int, at now: Timestamp) {
        guard enabled.contains(HealthUUID.intermediateCuffPressure) else { return }
        for pressure in stride(from: 20, through: peak, by: 40) {
            let value = BloodPressureMeasurementValue.intermediateCuffPressure(
                unit: .millimetresOfMercury, cuffPressure: SFloat(mantissa: pressure, exponent: 0) ?? SFloat(.nres))
            outbox.append(HealthTransmission(characteristic: HealthUUID.intermediateCuffPressure, value: value.bytes, delivery: .notify))
        }
    }

    /// The periodic streams: heart rate, PLX continuous, intermediate temperature, and CGM's measurement.
    mutating func liveTick(at now: Timestamp) {
        switch settings.kind {
        case .heartRate:
            let beats = Int.random(in: 60...100, using: &random)
            // RR interval in 1/1024 s for that rate (HRS v1.0).
            let value = HeartRateMeasurementValue(
                beatsPerMinute: UInt16(beats), contact: .detected, rrIntervals1024ths: [UInt16(60 * 1024 / beats)])
            enqueueLive(HealthUUID.heartRateMeasurement, value.bytes)
        case .pulseOximeter:
            let value = PLXContinuousValue(
                spO2: SFloat(mantissa: Int.random(in: 93...99, using: &random), exponent: 0) ?? SFloat(.nres),
                pulseRate: SFloat(mantissa: Int.random(in: 55...95, using: &random), exponent: 0) ?? SFloat(.nres))
            enqueueLive(HealthUUID.plxContinuousMeasurement, value.bytes)
        case .thermometer:
            let value = TemperatureMeasurementValue(
                unit: .celsius, temperature: MedicalFloat32(mantissa: Int.random(in: 350...380, using: &random), exponent: -1) ?? MedicalFloat32(.nres))
            enqueueLive(HealthUUID.intermediateTemperature, value.bytes)
        case .cgm:
            takeMeasurement(at: now, live: true)
        case .bloodPressure, .glucose, .weightScale:
            break
        }
    }

    mutating func enqueueLive(_ characteristic: UInt16, _ bytes: [UInt8]) {
        guard isConnected, enabled.contains(characteristic) else { return }
        outbox.append(HealthTransmission(characteristic: characteristic, value: bytes, delivery: .notify))
    }

    /// Rule 3: enabling the measurement CCCD releases the stored measurements (the scale's only for the consented
    /// user, or those of no known user).
    mutating func storedMeasurementsOnSubscribe(_ characteristic: UInt16) {
        switch (settings.kind, characteristic) {
        case (.bloodPressure, HealthUUID.bloodPressureMeasurement), (.thermometer, HealthUUID.temperatureMeasurement):
            outbox += store.records.flatMap(\.transmissions)
        case (.weightScale, HealthUUID.weightMeasurement):
            outbox += storedWeights { $0 == 0xFF || $0 == consentedUser }
        default:
            break
        }
    }

    func storedWeights(for user: (UInt8) -> Bool) -> [HealthTransmission] {
        store.records.filter { user(recordUsers[$0.sequenceNumber] ?? 0xFF) }.flatMap(\.transmissions)
    }

    /// A confirmed indication of a stored cuff, thermometer or scale measurement: the device forgets it.
    mutating func storedMeasurementConfirmed(_ transmission: HealthTransmission) {
        switch settings.kind {
        case .bloodPressure, .thermometer, .weightScale:
            if let record = store.records.first(where: { $0.transmissions.contains(transmission) }) {
                _ = store.delete(.range(record.sequenceNumber, record.sequenceNumber))
                recordUsers[record.sequenceNumber] = nil
            }
        default:
            break
        }
    }
}
